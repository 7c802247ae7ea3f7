"""`workspace.template`: a path that is no folder is refused where the run's settings are
checked, before the run starts (exit 2, one line, no run folder, no model request), and again
before the first task (a folder can vanish in between)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from bashgym_work_tasks.settings import WorkspaceSettings
from bashgym_work_tasks.stage import check_workspace

from bashgym.contracts import InputError


def student_run(bashgym_cli: Any, workdir: Path, endpoint: str, template: Path) -> Any:
    """`bashgym run -x student` (the real executor, which asks its model once before any task)
    with `workspace.template=template`, its model the scripted server at `endpoint`."""
    (workdir / "bashgym.toml").write_text(
        f'[models.student]\nprovider = "openai-compatible"\nmodel = "scripted-student"\n'
        f'endpoint = "{endpoint}"\n'
    )
    (workdir / "tasks.txt").write_text("write a file\n")
    return bashgym_cli(
        "run", "-s", "prompts", "--set", "source.path=tasks.txt", "-x", "student", "-e", "local",
        "-k", "parquet", "--set", f"workspace.template={template}", "-o", "out",
    )  # fmt: skip


@pytest.mark.parametrize("make", ["missing", "a file"])
def test_a_template_that_is_no_folder_exits_2_before_any_run_folder_or_model_request(
    bashgym_cli: Any, bashgym_env: Any, model_server: Any, tmp_path: Path, make: str
) -> None:
    template = tmp_path / "nope"
    if make == "a file":
        template.write_text("not a folder\n")
    result = student_run(bashgym_cli, bashgym_env.workdir, model_server.openai_base_url, template)
    why = "does not exist" if make == "missing" else "is not a folder"
    assert result.exit_code == 2, result.output
    assert f"template: {why} (got '{template}')" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not (bashgym_env.workdir / "out").exists()
    assert model_server.requests == []


def test_the_run_checks_the_template_again_before_its_first_task(tmp_path: Path) -> None:
    """A folder that vanishes after the settings were checked still fails the run in one line."""
    template = tmp_path / "tpl"
    template.mkdir()
    spec = WorkspaceSettings(template=template)
    template.rmdir()
    with pytest.raises(InputError, match="is not a folder"):
        asyncio.run(check_workspace(spec))


def test_a_default_template_that_moved_stops_no_run_without_tasks(
    bashgym_cli: Any, bashgym_env: Any, tmp_path: Path
) -> None:
    """bashgym.toml's [workspace] is a default for runs with tasks: a template there that moved
    is said when a run with tasks starts (before its first task), never by a run that has none."""
    gone = tmp_path / "gone"
    (bashgym_env.workdir / "bashgym.toml").write_text(f'[workspace]\ntemplate = "{gone}"\n')
    result = bashgym_cli("run", "-p", "samplers", "-n", "2", "-k", "parquet", "-o", "out")
    assert result.exit_code == 0, result.output
    assert (bashgym_env.workdir / "out" / "data.parquet").is_file()
