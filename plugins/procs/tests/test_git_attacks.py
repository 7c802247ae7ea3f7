"""Git on a workspace a task wrote runs nothing the task wrote.

Each vector is a real repository whose config, hooks, attributes or layout would run a payload
that creates a marker file outside the workspace. Every vector is first shown to work against
plain `git` (a control, so the test proves the attack is real), then run through
`bashgym_procs.git`: the marker must not exist, and the safe git still reports the right status
(or refuses the repository by name).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from bashgym_procs import git

IDENTITY = {"user.name": "t", "user.email": "t@t"}
HOST_GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def plain_git(ws: Path, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """git as a naive host would run it (identity given; the user's own config left out)."""
    ident = [arg for k, v in IDENTITY.items() for arg in ("-c", f"{k}={v}")]
    return subprocess.run(
        ["git", *ident, "-C", str(ws), *args], env=HOST_GIT_ENV, capture_output=True, text=True,
        check=check, timeout=60,
    )  # fmt: skip


def make_repo(ws: Path) -> Path:
    """A clone-like repository: a.txt committed, then modified by "the task"."""
    ws.mkdir(parents=True)
    plain_git(ws, "init", "-q", "-b", "main", check=True)
    (ws / "a.txt").write_text("one\n")
    plain_git(ws, "add", ".", check=True)
    plain_git(ws, "commit", "-qm", "v1", check=True)
    (ws / "a.txt").write_text("one\ntwo\n")
    return ws


def config(ws: Path, text: str) -> None:
    with (ws / ".git" / "config").open("a") as fh:
        fh.write(text)


def script(path: Path, marker: Path, then: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch {marker}\n{then}\n")
    path.chmod(0o755)
    return path


# --- each vector: what the task writes into its workspace, and the git command that fires it --


def fsmonitor(ws: Path, m: Path) -> None:
    config(ws, f'[core]\n\tfsmonitor = "touch {m}; false"\n')


def post_index_hook(ws: Path, m: Path) -> None:
    script(ws / ".git" / "hooks" / "post-index-change", m)


def commit_hooks(ws: Path, m: Path) -> None:
    for hook in ("pre-commit", "commit-msg", "post-commit", "reference-transaction"):
        script(ws / ".git" / "hooks" / hook, m)


def hooks_path(ws: Path, m: Path) -> None:
    script(ws / "my-hooks" / "pre-commit", m)
    config(ws, f"[core]\n\thooksPath = {ws / 'my-hooks'}\n")


def clean_filter(ws: Path, m: Path) -> None:
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    config(ws, f'[filter "evil"]\n\tclean = "touch {m}; cat"\n\tsmudge = "touch {m}; cat"\n')


def process_filter(ws: Path, m: Path) -> None:
    (ws / ".gitattributes").write_text("*.txt filter=evil\n")
    config(ws, f'[filter "evil"]\n\tprocess = "touch {m}; false"\n')


def external_diff(ws: Path, m: Path) -> None:
    config(ws, f"[diff]\n\texternal = {script(ws / 'x.sh', m)}\n")


def textconv(ws: Path, m: Path) -> None:
    (ws / ".gitattributes").write_text("*.txt diff=evil\n")
    config(ws, f'[diff "evil"]\n\ttextconv = "touch {m}; cat"\n')


def include_path(ws: Path, m: Path) -> None:
    (ws / ".gitattributes").write_text("*.txt diff=evil\n")
    (ws / "inc.cfg").write_text(f'[diff "evil"]\n\ttextconv = "touch {m}; cat"\n')
    config(ws, f"[include]\n\tpath = {ws / 'inc.cfg'}\n")


def include_if(ws: Path, m: Path) -> None:
    (ws / ".gitattributes").write_text("*.txt diff=evil\n")
    (ws / "inc.cfg").write_text(f'[diff "evil"]\n\ttextconv = "touch {m}; cat"\n')
    config(ws, f'[includeIf "gitdir:/"]\n\tpath = {ws / "inc.cfg"}\n')


def worktree_config(ws: Path, m: Path) -> None:
    (ws / ".gitattributes").write_text("*.txt diff=evil\n")
    config(ws, "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tworktreeConfig = true\n")
    (ws / ".git" / "config.worktree").write_text(f'[diff "evil"]\n\ttextconv = "touch {m}; cat"\n')


def editor(ws: Path, m: Path) -> None:
    config(ws, f'[core]\n\teditor = "touch {m}; false"\n')


def gpg_program(ws: Path, m: Path) -> None:
    config(ws, f"[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {script(ws / 'gpg.sh', m)}\n")


def merge_driver(ws: Path, m: Path) -> None:
    plain_git(ws, "commit", "-qam", "v2", check=True)
    plain_git(ws, "checkout", "-qb", "other", "HEAD~1", check=True)
    (ws / "a.txt").write_text("one\nthree\n")
    plain_git(ws, "commit", "-qam", "v3", check=True)
    plain_git(ws, "checkout", "-q", "main", check=True)
    (ws / ".git" / "info" / "attributes").write_text("*.txt merge=evil\n")
    config(ws, f'[merge "evil"]\n\tdriver = "touch {m}; false"\n')


def ext_remote(ws: Path, m: Path) -> None:
    config(ws, '[protocol "ext"]\n\tallow = always\n')
    config(ws, f'[remote "evil"]\n\turl = "ext::sh -c touch% {m}"\n')


def ssh_command(ws: Path, m: Path) -> None:
    config(ws, f'[core]\n\tsshCommand = "touch {m}; false"\n[remote "evil"]\n\turl = ssh://h/r\n')


def pager(ws: Path, m: Path) -> None:
    config(ws, f'[core]\n\tpager = "touch {m}; cat"\n[pager]\n\tstatus = true\n\tdiff = true\n')


EXECUTES: list[tuple[str, Callable[[Path, Path], None], tuple[str, ...]]] = [
    ("core.fsmonitor", fsmonitor, ("status",)),
    ("post-index-change hook", post_index_hook, ("status",)),
    ("commit hooks", commit_hooks, ("commit", "-qam", "x")),
    ("core.hooksPath", hooks_path, ("commit", "-qam", "x")),
    ("filter clean", clean_filter, ("diff",)),
    ("filter process", process_filter, ("diff",)),
    ("diff.external", external_diff, ("diff",)),
    ("diff textconv", textconv, ("diff",)),
    ("include.path", include_path, ("diff",)),
    ("includeIf", include_if, ("diff",)),
    ("config.worktree", worktree_config, ("diff",)),
    ("core.editor", editor, ("commit", "-qa")),
    ("gpg.program", gpg_program, ("commit", "-qam", "x")),
    ("merge driver", merge_driver, ("merge", "-q", "-m", "m", "other")),
    ("ext:: remote", ext_remote, ("fetch", "evil")),
    ("core.sshCommand", ssh_command, ("fetch", "evil")),
]


@pytest.mark.parametrize(("name", "plant", "args"), EXECUTES, ids=[e[0] for e in EXECUTES])
def test_a_vector_that_runs_under_plain_git_runs_nothing_under_safe_git(
    tmp_path, name, plant, args
):
    outside = tmp_path / "outside"
    outside.mkdir()
    control, marker = outside / "control", outside / "marker"
    plant(make_repo(tmp_path / "control-ws"), control)
    plain_git(tmp_path / "control-ws", *args)
    assert control.exists(), f"{name}: the control did not fire, so the test proves nothing"

    ws = make_repo(tmp_path / "ws")
    plant(ws, marker)
    repo = git.Repo.untrusted(ws)
    asyncio.run(git.run(repo, *args, config=IDENTITY))
    paths = asyncio.run(git.changed_paths(repo))
    assert not marker.exists(), f"{name}: the task's program ran on the host"
    if args[0] in ("status", "diff", "fetch"):
        assert "a.txt" in paths  # and git still says what changed


def test_the_pager_is_never_started(tmp_path):
    """A pager only starts on a terminal (not in a test): this checks it is off all the same."""
    ws = make_repo(tmp_path / "ws")
    pager(ws, tmp_path / "marker")
    repo = git.Repo.untrusted(ws)
    done = asyncio.run(git.run(repo, "diff"))
    assert "+two" in done.output and not (tmp_path / "marker").exists()
    assert "--no-pager" in git._global_options()


def test_a_clean_repository_is_left_as_it_is_and_a_dirty_config_keeps_only_data(tmp_path):
    ws = make_repo(tmp_path / "ws")
    config(ws, '[remote "origin"]\n\turl = https://example.com/r.git\n'
               "\tfetch = +refs/heads/*:refs/remotes/origin/*\n")  # fmt: skip
    before = (ws / ".git" / "config").read_bytes()
    repo = git.Repo.untrusted(ws)
    assert asyncio.run(git.prepare(repo)) == []
    assert (ws / ".git" / "config").read_bytes() == before  # a clone's config is not touched

    fsmonitor(ws, tmp_path / "m")
    config(ws, '[alias]\n\tst = "!touch /tmp/x"\n[remote "a b\\"c"]\n\turl = "x;y"\n')
    dropped = asyncio.run(git.prepare(repo))
    assert dropped == ["alias.st", "core.fsmonitor"]
    listing = plain_git(ws, "config", "--file", ".git/config", "--list").stdout.splitlines()
    assert "remote.origin.url=https://example.com/r.git" in listing
    assert 'remote.a b"c.url=x;y' in listing
    assert not any(k.startswith(("alias.", "core.fsmonitor")) for k in listing)


def test_core_worktree_outside_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host file\n")
    ws = make_repo(tmp_path / "ws")
    config(ws, f"[core]\n\tworktree = {outside}\n")
    assert "secret.txt" in plain_git(ws, "status", "--porcelain").stdout  # the control
    paths = asyncio.run(git.changed_paths(git.Repo.untrusted(ws)))
    assert paths == ["a.txt"]


def _outside_repo(tmp_path: Path, marker: Path) -> Path:
    evil = make_repo(tmp_path / "elsewhere")
    fsmonitor(evil, marker)
    return evil


@pytest.mark.parametrize(
    "layout",
    ["git file", "git symlink", "config symlink", "commondir", "alternates", "fifo", "submodule"],
)
def test_a_layout_pointing_outside_or_running_another_config_is_refused(tmp_path, layout):
    marker = tmp_path / "marker"
    evil = _outside_repo(tmp_path, marker)
    ws = make_repo(tmp_path / "ws")
    dot_git = ws / ".git"
    if layout == "git file":
        shutil.rmtree(dot_git)
        dot_git.write_text(f"gitdir: {evil / '.git'}\n")
    elif layout == "git symlink":
        shutil.rmtree(dot_git)
        dot_git.symlink_to(evil / ".git")
    elif layout == "config symlink":
        (dot_git / "config").unlink()
        (dot_git / "config").symlink_to(evil / ".git" / "config")
    elif layout == "commondir":
        (dot_git / "commondir").write_text(f"{evil / '.git'}\n")
    elif layout == "alternates":
        (dot_git / "objects" / "info" / "alternates").write_text(f"{evil / '.git' / 'objects'}\n")
    elif layout == "fifo":
        os.mkfifo(dot_git / "packed-refs")
    elif layout == "submodule":  # a populated gitlink: status would run git with its config
        sub = make_repo(ws / "sub")
        plain_git(sub, "commit", "-qam", "clean", check=True)
        clean_filter(sub, marker)  # the filter is in the submodule's own config
        plain_git(ws, "add", "sub", check=True)
        # in-tree, it beats `diff.ignoreSubmodules=all` given on the command line
        (ws / ".gitmodules").write_text('[submodule "s"]\n\tpath = sub\n\tignore = none\n')
        for control in (True, False):
            stamp = 1e9 + control
            os.utime(sub / "a.txt", (stamp, stamp))  # stat-dirty: git must clean it to compare
            if control:
                plain_git(ws, "-c", "diff.ignoreSubmodules=all", "status")
                assert marker.exists(), "control: plain git ran the submodule's config"
                marker.unlink()
    with pytest.raises(git.UnsafeRepo) as refused:
        try:
            asyncio.run(git.changed_paths(git.Repo.untrusted(ws)))
        finally:
            assert not marker.exists()
    assert str(ws) in str(refused.value) or str(evil) in str(refused.value)


def test_no_secret_of_bashgyms_environment_reaches_git(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=touch /tmp/nope'")
    ws = make_repo(tmp_path / "ws")
    repo = git.Repo.untrusted(ws)
    # an alias set by BashGym itself (trusted) shows git's whole environment
    done = asyncio.run(git.run(repo, "showenv", config={"alias.showenv": "!env"}))
    assert done.ok, done.output
    names = {line.split("=", 1)[0] for line in done.output.splitlines()}
    assert "ANTHROPIC_API_KEY" not in names and "sk-ant-secret" not in done.output
    assert "/tmp/nope" not in done.output
    assert "GIT_CONFIG_GLOBAL" in names


def test_a_relative_path_entry_never_finds_a_git_in_the_workspace(tmp_path, monkeypatch):
    ws = make_repo(tmp_path / "ws")
    script(ws / "bin" / "git", tmp_path / "marker")
    monkeypatch.setenv("PATH", f"bin:{os.environ['PATH']}")
    assert asyncio.run(git.changed_paths(git.Repo.untrusted(ws))) == ["a.txt", "bin/"]
    assert not (tmp_path / "marker").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the repository away")
def test_a_repository_another_user_owns_is_read(tmp_path):
    ws = make_repo(tmp_path / "ws")
    for folder, dirs, files in os.walk(ws):
        for name in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(name, 65534, 65534)
    assert "dubious ownership" in plain_git(ws, "status").stderr  # the control
    assert asyncio.run(git.changed_paths(git.Repo.untrusted(ws))) == ["a.txt"]


def test_a_trusted_git_dir_keeps_its_config_but_never_runs_hooks(tmp_path):
    """An orchestrator's layout: its repository out of the task's reach, the task's linked
    worktree in the workspace; the worktree's own `.git` file is ignored."""
    main = make_repo(tmp_path / "main")
    plain_git(main, "commit", "-qam", "v2", check=True)
    plain_git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "task", check=True)
    wt, marker = tmp_path / "wt", tmp_path / "marker"
    commit_hooks(main, marker)
    (wt / ".git").write_text(f"gitdir: {_outside_repo(tmp_path, marker) / '.git'}\n")
    (wt / "b.txt").write_text("new\n")
    repo = git.Repo.trusted(wt, main / ".git" / "worktrees" / "wt")
    assert asyncio.run(git.changed_paths(repo)) == ["b.txt"]
    done = asyncio.run(git.run(repo, "add", "b.txt"))
    assert done.ok, done.output
    done = asyncio.run(git.run(repo, "commit", "-qm", "task", config=IDENTITY))
    assert done.ok, done.output
    assert not marker.exists()
    log = plain_git(main, "log", "--format=%s", "task").stdout.split()
    assert log[0] == "task"


def test_the_index_listing_is_cached_but_never_stale(tmp_path):
    """The gitlinks of an index are listed once per index file; an index rewritten in place
    with its size and mtime kept (a task can set mtime, not ctime), or a `.git` appearing in a
    gitlink's folder, is still refused."""
    ws = make_repo(tmp_path / "ws")
    blob = plain_git(ws, "hash-object", "-w", "a.txt", check=True).stdout.strip()
    plain_git(ws, "update-index", "--add", "--cacheinfo", f"100644,{blob},sub", check=True)
    make_repo(ws / "sub")  # a repository where the index has a plain file
    repo = git.Repo.untrusted(ws)
    assert asyncio.run(git.run(repo, "status")).ok  # (status may rewrite the index)
    assert asyncio.run(git.run(repo, "rev-parse", "HEAD")).ok  # listed: no gitlink
    assert asyncio.run(git.run(repo, "rev-parse", "HEAD")).ok  # from the cache
    # the same index with `sub` as a gitlink: same size, written over the old one in place
    other = tmp_path / "other"
    shutil.copytree(ws, other)
    plain_git(other, "update-index", "--cacheinfo", f"160000,{blob},sub", check=True)
    index = ws / ".git" / "index"
    before, data = index.stat(), (other / ".git" / "index").read_bytes()
    assert len(data) == before.st_size
    with index.open("r+b") as fh:
        fh.write(data)
    os.utime(index, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = index.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    with pytest.raises(git.UnsafeRepo, match="submodule 'sub'"):
        asyncio.run(git.run(repo, "rev-parse", "HEAD"))


def test_a_git_dir_appearing_in_a_cached_gitlink_is_refused(tmp_path):
    ws = make_repo(tmp_path / "ws")
    blob = plain_git(ws, "hash-object", "-w", "a.txt", check=True).stdout.strip()
    plain_git(ws, "update-index", "--add", "--cacheinfo", f"160000,{blob},sub", check=True)
    repo = git.Repo.untrusted(ws)
    for _ in range(2):  # an empty gitlink folder: nothing to run; listed, then cached
        assert asyncio.run(git.run(repo, "rev-parse", "HEAD")).ok
    make_repo(ws / "sub")
    with pytest.raises(git.UnsafeRepo, match="submodule 'sub'"):
        asyncio.run(git.run(repo, "rev-parse", "HEAD"))
