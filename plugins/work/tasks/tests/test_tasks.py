"""Rows become Tasks the same way on every attempt (resume finds them again by id), and a
workspace starts as asked and reports what the task changed."""

from __future__ import annotations

import asyncio
import subprocess

import pandas as pd
import pytest
from bashgym_work_tasks import tasks_from_rows
from bashgym_work_tasks.settings import WorkspaceSettings
from bashgym_work_tasks.workspaces import changed_files, prepare_workspace

from bashgym.contracts import InputError


def test_the_first_prompt_column_names_the_task_and_ids_are_stable():
    rows = pd.DataFrame(
        {"question": ["fix the bug", "", "fix the bug", "add a test"], "team": ["a", "b", "c", "d"]}
    )
    tasks = tasks_from_rows(rows)
    again = tasks_from_rows(rows.iloc[::-1])
    assert [t.prompt for t in tasks] == ["fix the bug", "fix the bug", "add a test"]
    assert tasks[1].id == tasks[0].id + "-2"  # the same prompt twice: two tasks
    assert {t.id for t in tasks} == {t.id for t in again}  # row order does not change ids
    assert tasks[0].metadata == {"team": "a"}


def test_an_id_column_is_the_task_id():
    (task,) = tasks_from_rows(pd.DataFrame({"id": ["T-7"], "prompt": ["go"]}))
    assert task.id == "T-7" and task.metadata == {}


def test_rows_without_a_prompt_column_are_refused_by_name():
    with pytest.raises(InputError, match="columns name, size; name one of prompt"):
        tasks_from_rows(pd.DataFrame({"name": ["x"], "size": [1]}))


def test_a_template_workspace_is_a_fresh_copy_and_lists_only_what_the_task_changed(tmp_path):
    template = tmp_path / "tpl"
    (template / "src").mkdir(parents=True)
    (template / "src" / "a.py").write_text("x = 1\n")
    (template / "src" / "b.py").write_text("y = 2\n")
    (template / "old.txt").write_text("to be deleted\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "left-over.txt").write_text("from an attempt cut short")
    asyncio.run(prepare_workspace(ws, WorkspaceSettings(template=template)))
    assert sorted(p.name for p in ws.rglob("*") if p.is_file()) == ["a.py", "b.py", "old.txt"]
    (ws / "src" / "a.py").write_text("x = 10\n")  # changed
    (ws / "new.txt").write_text("n\n")  # new
    (ws / "old.txt").unlink()  # deleted
    # Claude Code's state, written because HOME is the workspace: not the task's work
    (ws / ".claude.json").write_text("{}")
    (ws / ".claude" / "projects" / "p").mkdir(parents=True)
    (ws / ".claude" / "projects" / "p" / "s.jsonl").write_text("{}\n")
    (ws / ".claude" / "settings.json").write_text("{}")  # a file a task may mean to write
    assert asyncio.run(changed_files(ws)) == [
        ".claude/settings.json", "new.txt", "old.txt", "src/a.py"
    ]  # fmt: skip


def test_an_empty_workspace_lists_what_the_task_wrote(tmp_path):
    ws = tmp_path / "ws"
    asyncio.run(prepare_workspace(ws, WorkspaceSettings()))
    (ws / "out.txt").write_text("hi")
    (ws / ".claude.json.backup.1700000000").write_text("{}")
    assert asyncio.run(changed_files(ws)) == ["out.txt"]


def test_a_cloned_workspace_reports_what_git_sees_changed(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "README.md").write_text("v1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    ws = tmp_path / "ws"
    asyncio.run(prepare_workspace(ws, WorkspaceSettings(repo=str(repo))))
    assert asyncio.run(changed_files(ws)) == []
    (ws / "README.md").write_text("v2\n")
    (ws / "new.txt").write_text("n\n")
    assert asyncio.run(changed_files(ws)) == ["README.md", "new.txt"]


def test_a_clone_that_fails_says_why(tmp_path):
    with pytest.raises(RuntimeError, match="git clone failed"):
        ws = tmp_path / "ws"
        asyncio.run(prepare_workspace(ws, WorkspaceSettings(repo=str(tmp_path / "no"))))
