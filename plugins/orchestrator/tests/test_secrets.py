"""A secret in a planned task's prompt -- from the planner's answer, or a hand edit of
plan.json -- lands in no file of the job: plan.json and state.db hold it redacted, as every
other file does, and the worker gets the prompt as those files hold it (a plain `bashgym run`'s
rows are scrubbed before any executor sees them, too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.job import Job
from bashgym_testing import Reply
from bashgym_testing.tokens import github_token

SPEC = "# Keep a token\n\n## Acceptance criteria\n- token.txt exists\n"


def plan_answer(token: str) -> Reply:
    task = {
        "id": "keep",
        "title": "Write token.txt",
        "description": "the file",
        "priority": "high",
        "depends_on": [],
        "files": ["token.txt"],
        "estimated_turns": 1,
        "budget_usd": 0.5,
        "prompt": f"Write it.\n```sh\necho {token} > token.txt\n```\n",
    }
    return Reply(json.dumps({"tasks": [task]}))


def files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()]


@pytest.mark.slow
def test_no_file_of_the_job_holds_a_planned_secret(
    bashgym_cli: Any, scripted_models: Any, repo: Path, tmp_path: Path, orch: Any
) -> None:
    planned_token, edited_token = github_token(), github_token()
    spec = tmp_path / "spec.md"
    spec.write_text(SPEC)
    scripted_models.server.script(plan_answer(planned_token))

    planned = bashgym_cli("orchestrate", "plan", spec, "--repo", repo, "--job", tmp_path / "j")

    assert planned.exit_code == 0, planned.output
    job = Job.at(tmp_path / "j")
    assert planned_token not in job.plan_file.read_text()
    assert "[REDACTED:github-token]" in job.plan().tasks[0].prompt
    assert "redacted in plan.json" in planned.output
    assert planned_token not in planned.output
    # a person adds a secret by hand before running it
    plan = job.plan()
    plan.tasks[0].prompt += f"\nAlso note {edited_token}.\n"
    job.save_plan(plan)

    done = bashgym_cli(
        "orchestrate", "run", job.dir, "--yes", "-x", "shell", "--plugin", orch.shell_plugin,
        "-e", "local", "--set", "source.keep_worktrees=all", "-k", "nemo-jsonl",
    )  # fmt: skip

    assert done.exit_code == 0, done.output
    result = job.result()
    assert result is not None and result["counts"] == {"merged": 1}, result
    # the worker got the prompt as the files hold it: what it wrote is the redacted text
    written = orch.git(repo, "show", f"bashgym/{job.name}/integration:token.txt")
    assert written == "[REDACTED:github-token]"
    assert planned_token not in done.output and edited_token not in done.output
    checked = files_under(job.dir)
    assert job.dir / "state.db" in checked and job.dir / "plan.json" in checked
    for path in checked:
        data = path.read_bytes()
        assert planned_token.encode() not in data, f"{path} holds the planner's token"
        if path != job.plan_file:  # the person's own edit of their input, kept as they made it
            assert edited_token.encode() not in data, f"{path} holds the hand-edited token"
