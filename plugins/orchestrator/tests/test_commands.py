"""The commands from a spec: `orchestrate plan` with the planner on the scripted server, then
`run SPEC --yes` planning and running in one go, `status`, `resume` of a finished job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.job import Job
from bashgym_testing import Reply

SPEC = """+++
verify = "test -f hello.txt"
+++
# Say hello

## Acceptance criteria
- hello.txt exists
"""


def plan_answer(command: str) -> Reply:
    task = {
        "id": "hello",
        "title": "Write hello.txt",
        "description": "the file",
        "priority": "high",
        "depends_on": [],
        "files": ["hello.txt"],
        "estimated_turns": 2,
        "budget_usd": 0.5,
        "prompt": f"Write it.\n```sh\n{command}\n```\n",
    }
    return Reply(json.dumps({"tasks": [task]}))


@pytest.mark.slow
def test_plan_then_run_spec_with_yes(
    bashgym_cli: Any,
    no_scrub: None,
    scripted_models: Any,
    repo: Path,
    tmp_path: Path,
    orch: Any,
) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    scripted_models.server.script(plan_answer("echo hi > hello.txt"))

    planned = bashgym_cli("orchestrate", "plan", spec, "--repo", repo, "--job", tmp_path / "j1")

    assert planned.exit_code == 0, planned.output
    job = Job.at(tmp_path / "j1")
    spend = job.planning()  # what planning cost, charged to the job when it runs
    assert spend is not None and spend.requests == 1 and spend.usage.input_tokens > 0
    assert spend.alias == "default" and "1 request(s)" in planned.output
    assert [t.id for t in job.plan().tasks] == ["hello"] and not job.plan().approved
    assert "hello" in planned.stdout and "approve" in planned.stdout
    assert job.spec().repository == repo and job.name == "j1"
    refused = bashgym_cli("orchestrate", "run", job.dir, "-x", "shell")
    assert refused.exit_code == 2 and "not approved" in refused.output

    # a spec straight to a finished job: planned, approved by --yes, run; the planner is a
    # model with a price (litellm's list), so its cost shows in run.json and job.json
    orch.git(repo, "branch", "bashgym/j1/integration")  # a branch of another job named j1
    with (scripted_models.env.workdir / "bashgym.toml").open("a") as toml:
        toml.write(
            '[models.planner]\nprovider = "openai-compatible"\nmodel = "gpt-4o-mini"\n'
            f'endpoint = "{scripted_models.server.openai_base_url}"\n'
            'api_key_env = "BASHGYM_SCRIPTED_KEY"\n'
        )
    scripted_models.server.script(plan_answer("echo hi > hello.txt"))
    done = bashgym_cli(
        "orchestrate",
        "run",
        spec,
        "--repo",
        repo,
        "--yes",
        "-x",
        "shell",
        "--plugin",
        orch.shell_plugin,
        "-e",
        "local",
        "-k",
        "nemo-jsonl",
    )
    assert done.exit_code == 0, done.output
    made = next(p for p in Path(scripted_models.settings().runs_dir).glob("*") if p.is_dir())
    ran = Job.at(made)
    result = ran.result()
    assert result is not None and result["counts"] == {"merged": 1}
    planning = ran.planning()
    assert planning is not None and planning.cost_usd and planning.cost_usd > 0
    assert result["planning_cost_usd"] == result["cost_usd"] == round(planning.cost_usd, 6)
    run = json.loads((ran.dir / "run.json").read_text())
    assert run["usage_by_alias"]["planner"]["requests"] == 1
    assert run["cost_usd"] >= planning.cost_usd > 0
    assert run["usage"]["input_tokens"] >= planning.usage.input_tokens
    assert orch.git(repo, "show", f"bashgym/{ran.name}/integration:hello.txt") == "hi"
    status = json.loads(bashgym_cli("orchestrate", "status", ran.dir, "--json").stdout)
    assert status["status"] == "done" and status["tasks"]["hello"]["state"] == "merged"
    again = bashgym_cli("orchestrate", "resume", ran.dir)
    assert again.exit_code == 2 and "has finished" in again.output

    # planning's cost is spent from the job's budget: a cap below it starts no task
    scripted_models.server.script(plan_answer("echo hi > hello.txt"))
    capped = bashgym_cli(
        "orchestrate", "run", spec, "--repo", repo, "--yes", "-x", "shell", "-e", "local",
        "--plugin", orch.shell_plugin, "--budget", f"{planning.cost_usd / 2:.8f}",
        "-k", "nemo-jsonl",
    )  # fmt: skip
    assert capped.exit_code == 1, capped.output  # no task merged: the job failed
    job3 = Job.at(next(p for p in Path(scripted_models.settings().runs_dir).glob("*") if p != made))
    assert job3.result()["counts"] == {"blocked": 1}  # type: ignore[index]
    assert job3.result()["status"] == "failed"  # type: ignore[index]
    assert "budget:" in job3.result()["tasks"]["hello"]["reason"]  # type: ignore[index]


def test_plan_says_when_the_branches_cannot_be_read(
    bashgym_cli: Any, no_scrub: None, scripted_models: Any, repo: Path, tmp_path: Path
) -> None:
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    scripted_models.server.script(plan_answer("echo hi > hello.txt"))
    (repo / ".git" / "packed-refs").write_text("garbage line\n")

    planned = bashgym_cli("orchestrate", "plan", spec, "--repo", repo, "--job", tmp_path / "j1")

    assert planned.exit_code == 1, planned.output
    said = f"git for-each-ref failed: fatal: unexpected line in {repo}/.git/packed-refs: garbage"
    assert said in planned.output and "Traceback" not in planned.output, planned.output
