"""A task's id and its workspace's `.git` are data: an agent run with hostile ids deletes and
binds nothing outside its run, and a task that writes a malicious `.git/config` into its cloned
workspace runs nothing on the host when BashGym lists what it changed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
from bashgym_testing import ScriptedExecutor

from bashgym.records import Task, WorkerResult


class Recorder(ScriptedExecutor):
    """Writes `out.txt` in each task's workspace and records where that workspace was."""

    def __init__(self) -> None:
        super().__init__()
        self.workspaces: dict[str, Path] = {}

    async def run(self, task: Task, options, ctx) -> WorkerResult:  # type: ignore[no-untyped-def]
        self.workspaces[task.id] = Path(ctx.workspace)
        self.enqueue("done", write={"out.txt": task.id})
        return await super().run(task, options, ctx)


def _run(bashgym_cli, register_plugin, tmp_path: Path, executor, rows, *extra: str):
    register_plugin(executor.plugin("recorder"), "recorder-plugin")
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "deep" / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={data}", "-x", "recorder", "-e", "local",
        "-k", "parquet", "--set", "workspace.keep=all", "--out", str(out), *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out, pd.read_parquet(out / "data.parquet").to_dict(orient="records")


def test_hostile_task_ids_never_leave_the_runs_workspaces(bashgym_cli, register_plugin, tmp_path):
    outside, absolute = tmp_path / "outside", tmp_path / "absolute-target"
    for folder in (outside, absolute):
        folder.mkdir()
        (folder / "sentinel").write_text("must survive")
    ids = [
        str(absolute), "../../outside", "..", ".", "-rf", "a/b", "ünï/cødé ☃", "x" * 300,
        "line\nbreak", "T-7",
    ]  # fmt: skip
    executor = Recorder()
    out, rows = _run(bashgym_cli, register_plugin, tmp_path, executor,
                     [{"id": i, "prompt": f"task {n}"} for n, i in enumerate(ids)])  # fmt: skip

    for folder in (outside, absolute):  # nothing outside the run was deleted or written
        assert sorted(p.name for p in folder.iterdir()) == ["sentinel"]
    assert (out / "run.json").is_file()  # `..` did not wipe the run folder itself
    root = (out / "workspaces").resolve()
    assert sorted(executor.workspaces) == sorted(ids)  # each id ran once, as itself
    seen = set()
    for task_id, workspace in executor.workspaces.items():
        assert workspace.resolve().parent == root, (task_id, workspace)
        assert (workspace / "out.txt").read_text() == task_id
        seen.add(workspace)
    assert len(seen) == len(ids)  # no two tasks shared a workspace
    assert executor.workspaces["T-7"] == root / "T-7"  # a readable id stays readable
    assert all(Path(r["workspace"]).resolve().parent == root for r in rows)
    assert all(list(r["workspace_files"]) == ["out.txt"] for r in rows)


def plant(ws: Path, m: Path) -> None:
    """Every git payload a task can plant in its cloned workspace, each touching `m`."""
    with (ws / ".git" / "config").open("a") as fh:
        fh.write(
            f'[core]\n\tfsmonitor = "touch {m}; false"\n\tpager = "touch {m}; cat"\n'
            f'[filter "evil"]\n\tclean = "touch {m}; cat"\n'
            f'[diff "evil"]\n\ttextconv = "touch {m}; cat"\n'
            f"[include]\n\tpath = {ws / 'inc.cfg'}\n"
        )  # fmt: skip
    (ws / "inc.cfg").write_text(f'[filter "evil2"]\n\tclean = "touch {m}; cat"\n')
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n*.md filter=evil2\n")
    hook = ws / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {m}\n")
    hook.chmod(0o755)
    os.utime(ws / "README.md", (1e9, 1e9))  # stat-dirty: git would run the clean filter


class Attacker(ScriptedExecutor):
    """A task that plants the payloads in its workspace, then writes a file."""

    def __init__(self, marker: Path) -> None:
        super().__init__()
        self.marker = marker

    async def run(self, task: Task, options, ctx) -> WorkerResult:  # type: ignore[no-untyped-def]
        plant(Path(ctx.workspace), self.marker)
        self.enqueue("done", write={"new.txt": "x"})
        return await super().run(task, options, ctx)


def test_a_malicious_git_config_in_a_cloned_workspace_runs_nothing_on_the_host(
    bashgym_cli, register_plugin, tmp_path
):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("v1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    marker = tmp_path / "host-marker"
    rows = [{"id": "evil", "prompt": "escape"}]
    _, (row,) = _run(bashgym_cli, register_plugin, tmp_path, Attacker(marker), rows,
                     "--set", f"workspace.repo={repo}")  # fmt: skip
    assert not marker.exists(), "the task's program ran on the host"
    assert sorted(row["workspace_files"]) == [".gitattributes", "inc.cfg", "new.txt"]
    # the control: the same payloads in a plain clone run under plain git
    control = tmp_path / "control"
    subprocess.run(["git", "clone", "-q", str(repo), str(control)], check=True)
    plant(control, tmp_path / "control-marker")
    subprocess.run(["git", "-C", str(control), "status"], capture_output=True,
                   env={**os.environ, "GIT_CONFIG_GLOBAL": os.devnull})  # fmt: skip
    assert (tmp_path / "control-marker").exists()


def test_a_missing_id_is_the_prompts_hash_not_the_text_nan():
    from bashgym_work_tasks import tasks_from_rows

    rows = pd.DataFrame(
        {"id": ["T-1", None, float("nan"), "", pd.NA, 0], "prompt": ["a", "b", "c", "d", "e", "f"]}
    )
    ids = [t.id for t in tasks_from_rows(rows)]
    assert ids[0] == "T-1" and ids[5] == "0" and not {"nan", "None", "<NA>"} & set(ids)
    assert all(len(i) == 12 for i in ids[1:5]) and len(set(ids)) == 6
