"""Planning: a model turns a spec into a task DAG, answering in a JSON schema.

The planner is the `planner` model alias, `default` when none is configured (`planner_model`).
Its answer is structured: a `json_schema` response format where the provider has one (OpenAI,
OpenAI-compatible servers, the embedded model, vLLM), a forced call of a `submit_plan` tool where
it has not (Anthropic's Messages API). The prompt holds the spec, the repository's file tree
(`git ls-files`, capped) and its README (capped), so tasks name real paths.

The answer is checked (`plan.validate_plan`: ids, dependencies, cycles, prompts, budgets). With
problems, the model gets ONE repair request that quotes them; a plan still wrong after it is a
PlanError naming every problem, never a plan that runs half-valid.

`plan_row` makes the decomposition a training row (OpenAI messages: the planner's system prompt,
the spec as the user turn, the plan as the assistant's): what a student needs to plan one day.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bashgym.contracts import Completion, InputError, Model, RunContext
from bashgym.records import Usage
from bashgym_orchestrator.plan import (
    ID_RULE,
    PLAN_SCHEMA,
    PRIORITIES,
    Plan,
    PlanError,
    PlannedTask,
    plan_errors,
    validate_plan,
)
from bashgym_orchestrator.spec import Spec, spec_text

PLANNER_ALIAS = "planner"
FALLBACK_ALIAS = "default"
TOOL_NAME = "submit_plan"
# providers whose API has no JSON-schema response format: the plan comes as a forced tool call
TOOL_PROVIDERS = frozenset({"anthropic"})
MAX_TREE_FILES = 1500
MAX_TREE_CHARS = 30_000
MAX_README_CHARS = 8_000
README_NAMES = ("README.md", "README.rst", "README.txt", "README", "readme.md", "Readme.md")

SYSTEM_PROMPT = f"""\
You are the planner of a team of coding agents. Break the spec you are given into a DAG of tasks
that agents carry out in parallel, each in its own git worktree and branch of the repository.

How the tasks are run:
- A task starts from the base branch plus the merged work of the tasks it depends on, and sees
  nothing else: list in `depends_on` every task whose code it needs.
- Tasks without a path between them run at the same time and are merged afterwards: give them
  different files where you can (list the files each task expects to create or change in
  `files`), so their merges do not conflict. Do not split work that must touch the same lines.
- Each worker sees only its `prompt` and the repository: make the prompt complete (what to
  change, in which files, the behaviour wanted, how to test it). Include writing or updating
  tests in the task that changes the code.
- Prefer a few substantial tasks over many tiny ones; no task for planning, reviewing or merging
  (that is done for you).

Each task has: `id` (short kebab-case, unique; {ID_RULE}; not "integration"), `title` (one
line), `description`, `priority` ({", ".join(PRIORITIES)}), `depends_on` (ids), `files`
(repository-relative paths), `estimated_turns` (agent turns, at least 1), `budget_usd` (the
task's cost cap in USD) and `prompt`.
Answer with the plan as JSON: {{"tasks": [...]}}."""


@dataclass
class Spend:
    """What planning cost, answer by answer (the `charge` of a kernel `Charged` model): saved
    in the job dir by `orchestrate plan` and charged to the job's run when it starts, so
    run.json's usage and cost, and the job's budget, include planning."""

    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0  # None: a price was unknown
    model: str = ""
    alias: str | None = None
    duration_s: float = 0.0

    def charge(
        self, usage: Usage, cost_usd: float | None, *, model: str, alias: str | None = None
    ) -> None:
        self.requests += 1
        self.usage = self.usage + usage
        known = cost_usd is not None and self.cost_usd is not None
        self.cost_usd = self.cost_usd + cost_usd if known else None  # type: ignore[operator]
        self.model, self.alias = model, alias

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "usage": self.usage.model_dump()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Spend:
        return cls(**{**data, "usage": Usage.model_validate(data.get("usage") or {})})


def planner_model(source: RunContext | Any) -> Model:
    """The planning model: the `planner` alias when settings configure one, else `default`.
    `source`: a RunContext (answers charged to the run) or a Models session."""
    alias = PLANNER_ALIAS if PLANNER_ALIAS in source.settings.models else FALLBACK_ALIAS
    if isinstance(source, RunContext):
        return source.model(alias)
    return source.resolve(alias)  # type: ignore[no-any-return]


def repository_tree(repo: Path, *, max_files: int = MAX_TREE_FILES) -> str:
    """The repository's tracked files (`git ls-files`), one a line, capped: the paths past the
    cap are counted by top-level folder. InputError when `repo` is no git repository."""
    try:
        done = subprocess.run(
            ["git", "-c", "core.fsmonitor=false", "-C", str(repo), "ls-files", "-z"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{repo}: cannot list the repository's files ({exc})") from None
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        raise InputError(f"{repo}: not a git repository ({reason[-1] if reason else 'git failed'})")
    paths = [p for p in done.stdout.decode(errors="replace").split("\0") if p]
    shown: list[str] = []
    size = 0
    for path in paths:
        if len(shown) >= max_files or size + len(path) + 1 > MAX_TREE_CHARS:
            break
        shown.append(path)
        size += len(path) + 1
    rest = paths[len(shown) :]
    if rest:
        folders: dict[str, int] = {}
        for path in rest:
            top = path.split("/", 1)[0] + ("/" if "/" in path else "")
            folders[top] = folders.get(top, 0) + 1
        counted = ", ".join(f"{name} ({n})" for name, n in sorted(folders.items())[:40])
        shown.append(f"... and {len(rest)} more files: {counted}")
    return "\n".join(shown) if shown else "(no tracked files yet)"


def repository_readme(repo: Path) -> str | None:
    """The README at the repository's top, capped (None when there is none)."""
    for name in README_NAMES:
        path = repo / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            if len(text) > MAX_README_CHARS:
                text = text[:MAX_README_CHARS] + f"\n[... {len(text) - MAX_README_CHARS} more "
                text += "characters not shown]"
            return text
    return None


def planning_prompt(spec: Spec, repo: Path | None, *, cap_usd: float | None) -> str:
    """The user turn of a planning request: the spec, the job's cap, the repository."""
    parts = [spec_text(spec).rstrip()]
    if cap_usd is not None:
        parts.append(
            f"The job's budget is ${cap_usd:g}: the tasks' `budget_usd` must add up to at most "
            "that, and no task may be given more."
        )
    if repo is not None:
        parts.append(f"## The repository's files\n{repository_tree(repo)}")
        readme = repository_readme(repo)
        if readme is not None:
            parts.append(f"## The repository's README\n{readme}")
    return "\n\n".join(parts)


def _request(model: Model) -> dict[str, Any]:
    """How `model` is asked for schema-shaped output (`acomplete` keyword arguments)."""
    if model.provider in TOOL_PROVIDERS:
        tool = {
            "type": "function",
            "function": {
                "name": TOOL_NAME,
                "description": "Submit the task plan.",
                "parameters": PLAN_SCHEMA,
            },
        }
        choice = {"type": "function", "function": {"name": TOOL_NAME}}
        return {"tools": [tool], "params": {"tool_choice": choice}}
    schema = {"name": "plan", "schema": PLAN_SCHEMA, "strict": False}
    return {"response_format": {"type": "json_schema", "json_schema": schema}}


_FENCED = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def _answer(done: Completion) -> tuple[Any, list[str]]:
    """The answer's JSON (a forced tool call's arguments, else the text), or why there is none."""
    message = done.message
    calls = message.get("tool_calls") or []
    call = next((c for c in calls if c.get("function", {}).get("name") == TOOL_NAME), None)
    text = (call["function"].get("arguments") if call else message.get("content")) or ""
    cut = " (the answer was cut off at the token limit)" if done.finish_reason == "length" else ""
    if not text.strip():
        return None, [f"the answer holds no plan{cut}"]
    fenced = _FENCED.match(text)
    try:
        return json.loads(fenced.group(1) if fenced else text), []
    except json.JSONDecodeError as exc:
        return None, [f"the answer is not valid JSON ({exc}){cut}"]


def _check(
    data: Any, spec: Spec, planner: str, cap_usd: float | None
) -> tuple[Plan | None, list[str]]:
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        return None, ['the answer must be a JSON object {"tasks": [...]}']
    extra = sorted(set(data) - {"tasks"})
    plan, errors = plan_errors({"title": spec.title, "tasks": data["tasks"], "planner": planner})
    errors = [f'unknown key {key!r} next to "tasks"' for key in extra] + errors
    if plan is not None:
        errors += validate_plan(plan, cap_usd)
    return (plan if not errors else None), errors


def _repair_turns(done: Completion, errors: list[str]) -> list[dict[str, Any]]:
    """The assistant's answer and the request to fix it, quoting every problem."""
    quoted = "\n".join(f"- {error}" for error in errors)
    ask = (
        f"The plan has these problems:\n{quoted}\n\nFix every one of them and answer again "
        "with the whole corrected plan (all tasks, not only the changed ones)."
    )
    answer = {k: v for k, v in done.message.items() if k in ("role", "content", "tool_calls")}
    calls = answer.get("tool_calls") or []
    if calls:  # a tool call is answered by its result before the next user turn
        results = [{"role": "tool", "tool_call_id": call["id"], "content": ask} for call in calls]
        return [answer, *results]
    return [answer, {"role": "user", "content": ask}]


async def make_plan(spec: Spec, repo: Path, model: Model, *, cap_usd: float | None) -> Plan:
    """Ask `model` for the plan of `spec` on `repo`; one repair request when the answer has
    problems; PlanError naming every problem left. `cap_usd`: the job's budget (None: none)."""
    planner = f"{model.alias} ({model.model})"
    prompt = await asyncio.to_thread(planning_prompt, spec, repo, cap_usd=cap_usd)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]
    request = _request(model)
    errors: list[str] = []
    for attempt in range(2):
        done = await model.acomplete(messages, **request)
        data, errors = _answer(done)
        plan = None
        if not errors:
            plan, errors = _check(data, spec, planner, cap_usd)
        if plan is not None:
            return plan
        if attempt == 0:
            messages += _repair_turns(done, errors)
    raise PlanError(
        f"the planner ({planner}) gave no valid plan after one repair request: "
        + "; ".join(errors),
        errors,
    )


def plan_row(
    spec: Spec, plan: Plan, *, repo: Path | None = None, cap_usd: float | None = None
) -> dict[str, Any]:
    """The decomposition as an OpenAI-messages training row: the planner's system prompt, the
    spec (with `repo`'s file tree and README and the job's `cap_usd` when given, as the planner
    saw them) as the user turn, and the plan's tasks -- as approved, hand edits included -- as
    the assistant's JSON answer; `metadata` names the planner."""
    answer = {"tasks": [_task_answer(task) for task in plan.tasks]}
    return {
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": planning_prompt(spec, repo, cap_usd=cap_usd)},
            {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)},
        ],
        "metadata": {
            "kind": "orchestrator-plan",
            "planner": plan.planner,
            "approved": plan.approved,
            "tasks": len(plan.tasks),
        },
    }


def _task_answer(task: PlannedTask) -> dict[str, Any]:
    """A task as the schema asks the planner for it (the spec's `check` is not the model's)."""
    return task.model_dump(include=set(PLAN_SCHEMA["properties"]["tasks"]["items"]["properties"]))
