"""Planning against the scripted model server, through the real provider client `Model` uses:
the JSON-schema request (OpenAI-compatible) and the forced tool call (Anthropic), a plan
repaired by the one repair request, a plan that stays invalid."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.plan import PLAN_SCHEMA, PlanError, validate_plan
from bashgym_orchestrator.planning import (
    SYSTEM_PROMPT,
    TOOL_NAME,
    make_plan,
    plan_row,
    planner_model,
    repository_tree,
)
from bashgym_orchestrator.spec import Spec
from bashgym_testing import Reply, ScriptedModelServer, ToolUse, models_for

from bashgym.contracts import RunContext
from bashgym.settings import load_settings

SPEC = Spec(
    title="Add a greeting command",
    description="The CLI greets the user by name.",
    constraints=["no new dependencies"],
    acceptance=["`tool greet Ada` prints `Hello, Ada!`"],
)


def task(tid: str, *deps: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": tid,
        "title": f"do {tid}",
        "description": f"the {tid} part",
        "priority": "normal",
        "depends_on": list(deps),
        "files": [f"src/{tid}.py"],
        "estimated_turns": 4,
        "budget_usd": 0.5,
        "prompt": f"Write src/{tid}.py and its test.",
        **fields,
    }


VALID = {"tasks": [task("core"), task("cli", "core"), task("docs", "cli", priority="low")]}
CYCLE = {"tasks": [task("core", "cli"), task("cli", "core"), task("docs", "cli")]}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A real git repository with a README and a few tracked files."""
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# greeter\n\nA tiny CLI that says hello.\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "notes.txt").write_text("untracked\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "README.md", "src/main.py"], check=True)
    return root


def configure(workdir: Path, server: ScriptedModelServer, **aliases: str) -> None:
    """./bashgym.toml with each alias (name=provider) pointed at the scripted server."""
    lines = []
    for name, provider in aliases.items():
        base = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
        lines += [
            f"[models.{name}]",
            f'provider = "{provider}"',
            f'model = "{provider}-planner"',
            f'endpoint = "{base}"',
            'api_key_env = "PLANNER_KEY"',
            f"[models.{name}.params]",
            "max_retries = 0",
        ]
    (workdir / "bashgym.toml").write_text("\n".join(lines) + "\n")


@pytest.fixture
def session(bashgym_env: Any, model_server: ScriptedModelServer, monkeypatch: Any) -> Any:
    """`session(**aliases)`: a model session whose aliases answer from the scripted server."""
    monkeypatch.setenv("PLANNER_KEY", "scripted-key")
    opened = []

    def open_session(**aliases: str) -> Any:
        configure(bashgym_env.workdir, model_server, **aliases)
        models = models_for(load_settings())
        opened.append(models)
        return models

    yield open_session
    for models in opened:
        models.close()


def plan_with(models: Any, repo: Path, cap_usd: float | None = None) -> Any:
    return asyncio.run(make_plan(SPEC, repo, planner_model(models), cap_usd=cap_usd))


def test_a_valid_plan_from_a_json_schema_answer(session: Any, model_server: Any, repo: Path):
    models = session(planner="openai-compatible")
    model_server.script(Reply(json.dumps(VALID)))
    plan = plan_with(models, repo)
    assert [t.id for t in plan.tasks] == ["core", "cli", "docs"]
    assert plan.tasks[1].depends_on == ["core"] and plan.tasks[2].priority == "low"
    assert plan.title == SPEC.title and plan.planner == "planner (openai-compatible-planner)"
    assert not plan.approved and validate_plan(plan) == []
    (request,) = model_server.completions
    fmt = request.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == PLAN_SCHEMA
    assert "tools" not in request.body
    prompt = request.last_user_text
    assert "# Add a greeting command" in prompt and "- no new dependencies" in prompt
    assert "src/main.py" in prompt and "README.md" in prompt  # the tracked file tree
    assert "notes.txt" not in prompt  # untracked: not part of the repository
    assert "A tiny CLI that says hello." in prompt  # the README
    assert request.system_text == SYSTEM_PROMPT


def test_anthropic_answers_through_a_forced_tool_call(session: Any, model_server: Any, repo):
    models = session(planner="anthropic")
    model_server.script(Reply(tool_calls=[ToolUse(TOOL_NAME, VALID)]))
    plan = plan_with(models, repo)
    assert [t.id for t in plan.tasks] == ["core", "cli", "docs"]
    (request,) = model_server.completions
    assert request.api == "anthropic"
    assert request.body["tool_choice"] == {"type": "tool", "name": TOOL_NAME}
    (tool,) = request.body["tools"]
    assert tool["name"] == TOOL_NAME and tool["input_schema"]["required"] == ["tasks"]


@pytest.mark.parametrize("provider", ["openai-compatible", "anthropic"])
def test_a_cycle_is_repaired_by_one_request_quoting_it(
    session: Any, model_server: Any, repo: Path, provider: str
):
    models = session(planner=provider)

    def answer(plan: dict[str, Any]) -> Reply:
        if provider == "anthropic":
            return Reply(tool_calls=[ToolUse(TOOL_NAME, plan)])
        return Reply(json.dumps(plan))

    model_server.script(answer(CYCLE), answer(VALID))
    plan = plan_with(models, repo)
    assert [t.id for t in plan.tasks] == ["core", "cli", "docs"]
    first, repair = model_server.completions
    quoted = repair.last_user_text
    assert "dependency cycle: core -> cli -> core (each depends on the next)" in quoted
    assert "answer again with the whole corrected plan" in quoted
    # the repair carries the conversation: the original prompt and the answer being fixed
    assert repair.messages[0] == first.messages[0]
    assert json.dumps(CYCLE["tasks"][0]["prompt"])[1:-1] in json.dumps(repair.body)


def test_a_plan_that_stays_invalid_names_every_error(session, model_server, repo: Path):
    models = session(planner="openai-compatible")
    bad = {
        "tasks": [
            task("core", "core"),
            task("cli", "nowhere", prompt="  "),
            task("cli"),
            task("huge", budget_usd=50),
        ]
    }
    model_server.script(Reply(json.dumps(bad)), Reply(json.dumps(bad)))
    with pytest.raises(PlanError) as caught:
        plan_with(models, repo, cap_usd=10)
    message = str(caught.value)
    assert message.startswith("the planner (planner (openai-compatible-planner)) gave no valid")
    for error in (
        "task id 'cli' is used by 2 tasks",
        "task 'core' depends on itself",
        "task 'cli' depends on 'nowhere', which is not a task",
        "task 'cli' has an empty prompt",
        "task 'huge' has a budget of $50, over the job's cap of $10",
        "the tasks' budgets add up to $51.5, over the job's cap of $10",
    ):
        assert error in message
        assert error in caught.value.errors
    assert len(model_server.completions) == 2  # one repair request, no more


def test_an_answer_that_is_not_json_is_repaired(session: Any, model_server: Any, repo: Path):
    models = session(default="openai-compatible")  # no planner alias: `default` plans
    model_server.script(
        Reply("Here is the plan: tasks!"), Reply("```json\n" + json.dumps(VALID) + "\n```")
    )
    plan = plan_with(models, repo)
    assert plan.planner.startswith("default ") and len(plan.tasks) == 3
    assert "the answer is not valid JSON" in model_server.completions[1].last_user_text


def test_type_errors_name_the_task_and_field(session: Any, model_server: Any, repo: Path):
    models = session(planner="openai-compatible")
    bad = {"tasks": [task("core", estimated_turns=0, priority="urgent", extra=1)]}
    model_server.script(Reply(json.dumps(bad)), Reply(json.dumps({"plan": []})))
    with pytest.raises(PlanError) as caught:
        plan_with(models, repo)
    repair = model_server.completions[1].last_user_text
    assert "tasks[0] 'core': estimated_turns: Input should be greater than or equal to 1" in repair
    assert "tasks[0] 'core': priority: Input should be 'critical', 'high'" in repair
    assert "tasks[0] 'core': extra: unknown key" in repair
    assert 'the answer must be a JSON object {"tasks": [...]}' in str(caught.value)


def test_planner_model_falls_back_to_default(
    session: Any, model_server: Any, bashgym_env: Any, repo: Path
):
    models = session(default="openai-compatible")
    assert planner_model(models).alias == "default"
    models = session(default="openai-compatible", planner="anthropic")
    assert planner_model(models).alias == "planner"
    run = RunContext(run_dir=bashgym_env.root / "run", settings=models.settings, models=models)
    model = planner_model(run)
    assert model.alias == "planner" and model.provider == "anthropic"
    model_server.script(Reply(tool_calls=[ToolUse(TOOL_NAME, VALID)]))
    asyncio.run(make_plan(SPEC, repo, model, cap_usd=None))
    assert run.usage.input_tokens > 0  # answers through a RunContext are charged to the run


def test_planning_outside_a_git_repository_says_so(session: Any, tmp_path: Path):
    models = session(planner="openai-compatible")
    with pytest.raises(ValueError, match="not a git repository"):
        plan_with(models, tmp_path / "nowhere")


def test_the_tree_is_capped_and_the_rest_counted(repo: Path):
    (repo / "many").mkdir()
    for i in range(30):
        (repo / "many" / f"f{i}.py").write_text("")
    subprocess.run(["git", "-C", str(repo), "add", "many"], check=True)
    tree = repository_tree(repo, max_files=5)
    assert len(tree.splitlines()) == 6
    assert tree.splitlines()[-1] == "... and 27 more files: many/ (26), src/ (1)"


def test_plan_row_is_an_openai_messages_row(session: Any, model_server: Any, repo: Path):
    models = session(planner="openai-compatible")
    model_server.script(Reply(json.dumps(VALID)))
    plan = plan_with(models, repo)
    plan.tasks[0].check = "pytest -q"  # the spec's command, not part of the model's answer
    row = plan_row(SPEC, plan, repo=repo)
    system, user, assistant = row["messages"]
    assert (system["role"], user["role"], assistant["role"]) == ("system", "user", "assistant")
    assert system["content"] == SYSTEM_PROMPT
    assert user["content"] == model_server.completions[0].last_user_text
    assert json.loads(assistant["content"]) == VALID
    assert row["metadata"]["planner"] == plan.planner
