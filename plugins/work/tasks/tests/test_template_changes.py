"""A workspace copied from a template that is a git repository, with untracked files and
symlinks in it, lists only what the task changed: not the template's own untracked, ignored or
uncommitted files, and never what a link points at."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pandas as pd
from bashgym_testing import ScriptedExecutor

from bashgym.records import Task, WorkerResult


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True
    )


def template_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A git repository with committed files, an uncommitted change, an ignored file, and
    untracked files: symlinks out of it (a file, a folder, /etc/shadow, nothing) and a name a
    shell would run. Also the outside file a link points at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.txt").write_text("secret\n")
    tpl = tmp_path / "tpl"
    tpl.mkdir()
    git(tpl, "init", "-q")
    (tpl / "a.txt").write_text("a\n")
    (tpl / "b.txt").write_text("b\n")
    (tpl / ".gitignore").write_text("*.log\n")
    git(tpl, "add", ".")
    git(tpl, "commit", "-qm", "start")
    (tpl / "b.txt").write_text("b, edited but not committed\n")
    (tpl / "build.log").write_text("ignored\n")
    (tpl / "outfile").symlink_to(outside / "s.txt")
    (tpl / "outlink").symlink_to(outside)
    (tpl / "shadowlink").symlink_to("/etc/shadow")
    (tpl / "dangling").symlink_to(tmp_path / "nothing")
    (tpl / "odd $(touch PWNED);`id`\nnl.txt").write_text("x\n")
    return tpl, outside


class EditsATxt(ScriptedExecutor):
    """A task that changes `a.txt` and adds `new.txt`, and (as any process could) appends to
    the file the template's `outfile` link points at, outside the workspace."""

    def __init__(self, outside: Path) -> None:
        super().__init__()
        self.outside = outside

    async def run(self, task: Task, options: Any, ctx: Any) -> WorkerResult:
        with (self.outside / "s.txt").open("a") as fh:
            fh.write("changed outside\n")
        self.enqueue("done", write={"a.txt": "a, by the task\n", "new.txt": "n\n"})
        return await super().run(task, options, ctx)


def test_a_git_template_lists_only_what_the_task_changed(
    bashgym_cli: Any, register_plugin: Any, tmp_path: Path
) -> None:
    tpl, outside = template_repo(tmp_path)
    register_plugin(EditsATxt(outside).plugin("edits"), "edits-plugin")
    (tmp_path / "tasks.txt").write_text("edit a.txt\n")
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "prompts", "--set", f"source.path={tmp_path / 'tasks.txt'}", "-x", "edits",
        "-e", "local", "-k", "parquet", "--set", f"workspace.template={tpl}",
        "--set", "workspace.keep=all", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (row,) = pd.read_parquet(out / "data.parquet").to_dict(orient="records")
    assert list(row["workspace_files"]) == ["a.txt", "new.txt"]
    ws = Path(row["workspace"])  # the template's untracked files and links were copied as such
    assert os.readlink(ws / "shadowlink") == "/etc/shadow" and (ws / "build.log").is_file()
    assert not list(tmp_path.rglob("PWNED")) and not (ws / "PWNED").exists()
    assert not (Path(str(ws) + ".start.json")).exists()  # the snapshot is gone after the task
    assert json.loads((out / "run.json").read_text())["tasks"]["success"] == 1
