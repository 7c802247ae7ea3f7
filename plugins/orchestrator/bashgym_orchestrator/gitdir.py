"""The user's git dir, put back as it was before each of BashGym's git commands.

Why: a task's worktree is a *linked* worktree: its `.git` file names the user's
`.git/worktrees/<x>`, whose `commondir` is the user's `.git`. Under an environment that does
not confine a command's writes (`local`), a task can follow that file and write the user's
`.git/config` (a filter driver, `core.fsmonitor`, `include.path`, `extensions.worktreeConfig`),
`.git/hooks/*`, `.git/info/attributes`, a per-worktree `config.worktree` or a `commondir`.
`bashgym_procs.git` treats the user's repository as `trusted` (its config is the user's: their
git-lfs filter must keep working), so BashGym's own commit, diff and merge would then run the
task's program on the host, outside the environment; and what it planted would stay in the
user's repository, for their next `git status` to run with their full environment.

So, for such environments (`needs_guard`), the guard reads those files when the job starts
(`GitDirGuard.__init__`) and `restore()` puts back anything that differs -- content, mode, a
file added or removed, a folder or file swapped for a link -- before every git command the
orchestrator runs on the repository or its worktrees (`worktrees.Repository.run`, the one
place they all go through) and once more at the job's end. It is a check-then-run: a task
process still running could write between the check and git's start (milliseconds); under
bubblewrap nothing outside the workspace is writable, which is the real isolation.

What it does not cover: the rest of the git dir (refs, objects, the index) holds data git
never runs as a program; and a change the user makes to these files while a job runs is put
back too.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# bubblewrap's rank (`Environment.isolation`): the first that binds only the workspace
# writable; `local` (10) leaves the rest of the user's files writable
CONFINING_ISOLATION = 20

CONFIG_FILES = ("config", "config.worktree", "commondir")  # what git reads as config or redirect
FOLDERS = ("hooks", "info")  # hooks; info/attributes (filters) and info/exclude
WORKTREE_FILES = ("config.worktree", "commondir")  # what a linked worktree's admin dir adds
MAX_ENTRIES = 10_000  # a hooks/ or info/ folder larger than this is refused, not copied


class GitDirChanged(RuntimeError):
    """The git dir cannot be put back (a folder on its path swapped for a link, too large)."""


def needs_guard(environment: Any, options: Any, git_dir: Path) -> bool:
    """Whether a task in `environment` could write `git_dir`: an environment ranked below
    bubblewrap (`local`), or one whose `writable` option reaches the git dir."""
    if getattr(type(environment), "isolation", 0) < CONFINING_ISOLATION:
        return True
    real = os.path.realpath(git_dir)
    for extra in getattr(options, "writable", None) or []:
        path = os.path.realpath(os.path.expanduser(str(extra)))
        if os.path.commonpath([real, path]) in (real, path):
            return True
    return False


@dataclass(frozen=True)
class Entry:
    """What one path was: its kind (file, dir, link, absent), mode and bytes (a link's target)."""

    kind: str
    mode: int = 0
    data: bytes = b""


def _stamp(path: Path) -> tuple[int, ...] | None:
    """A path's identity and change time: a write changes ctime, which no process can set back."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _read(path: Path) -> Entry:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return Entry("absent")
    if stat.S_ISLNK(st.st_mode):
        return Entry("link", 0, os.fsencode(os.readlink(path)))
    if stat.S_ISDIR(st.st_mode):
        return Entry("dir", stat.S_IMODE(st.st_mode))
    if not stat.S_ISREG(st.st_mode):
        return Entry("other", stat.S_IMODE(st.st_mode))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as fh:
        return Entry("file", stat.S_IMODE(st.st_mode), fh.read())


def _walk(folder: Path) -> list[Path]:
    """Every path under `folder` (links not followed), parents before children."""
    found: list[Path] = []
    if not _real_dir(folder):
        return found
    for root, dirs, files in os.walk(folder):
        found += [Path(root, name) for name in sorted(dirs + files)]
        if len(found) > MAX_ENTRIES:
            raise GitDirChanged(f"{folder}: over {MAX_ENTRIES:,} entries")
    return found


def _mode(path: Path) -> int:
    try:
        return os.lstat(path).st_mode
    except FileNotFoundError:
        return 0


def _remove(path: Path) -> None:
    mode = _mode(path)
    if stat.S_ISDIR(mode):
        shutil.rmtree(path)  # refuses to follow a link; the folder's own entries go
    elif mode:
        path.unlink()


def _put(path: Path, entry: Entry) -> None:
    """Make `path` what `entry` says (its parent exists and is a real folder)."""
    current = _read(path)
    if current == entry:
        return
    if current.kind == "dir" and entry.kind == "dir":
        os.chmod(path, entry.mode)
        return
    if entry.kind == "file":  # a new file renamed over whatever is there: no link followed
        fd, tmp = tempfile.mkstemp(prefix=".bashgym-restore-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(entry.data)
            os.chmod(tmp, entry.mode)
            if current.kind == "dir":
                _remove(path)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return
    _remove(path)
    if entry.kind == "dir":
        os.mkdir(path, entry.mode)
        os.chmod(path, entry.mode)
    elif entry.kind == "link":
        os.symlink(os.fsdecode(entry.data), path)


class GitDirGuard:
    """The user's git dir's config files, hooks/ and info/, and each job worktree's admin
    files, as they were when watched (see the module docstring)."""

    def __init__(self, git_dir: Path, on_restore: Callable[[list[str]], None]) -> None:
        self.git_dir = Path(os.path.abspath(git_dir))
        self.on_restore = on_restore  # the paths put back (relative to the git dir)
        self.saved: dict[Path, Entry] = {}
        self.stamps: dict[Path, tuple[int, ...] | None] = {}
        self.folders = [self.git_dir / name for name in FOLDERS]
        self.admins: set[Path] = set()
        for path in [self.git_dir / name for name in CONFIG_FILES] + self.folders:
            self._save(path)
        for folder in self.folders:
            for path in _walk(folder):
                self._save(path)

    def _save(self, path: Path) -> None:
        self.stamps[path] = _stamp(path)
        self.saved[path] = _read(path)

    def watch_worktree(self, admin: Path) -> None:
        """A worktree the orchestrator just made (or found): its admin dir's files as they
        are now, before any task ran there."""
        admin = Path(os.path.abspath(admin))
        self.admins.add(admin)
        for name in WORKTREE_FILES:
            self._save(admin / name)

    def unwatch_worktree(self, admin: Path) -> None:
        """A worktree the orchestrator removed: its admin dir's files are no longer put back
        (what could not be deleted of it stays as the removal left it)."""
        self._forget(Path(os.path.abspath(admin)))

    def restore(self) -> list[str]:
        """Put back whatever differs from what was saved; the paths put back (and
        `on_restore` called with them), relative to the git dir."""
        self._check_path(self.git_dir)
        for admin in sorted(self.admins):
            if not _real_dir(admin):  # removed (by BashGym, or gone): git is not run there
                if not os.path.lexists(admin):
                    self._forget(admin)
                    continue
                raise GitDirChanged(f"{admin}: no longer a folder (a link?); git not run there")
            self._check_path(admin)
        changed = [path for path in self._watched() if _stamp(path) != self.stamps.get(path)]
        restored = [path for path in changed if self._restore_one(path)]
        if restored:
            self.on_restore(sorted(str(p.relative_to(self.git_dir)) for p in restored))
        return [str(p.relative_to(self.git_dir)) for p in restored]

    def _check_path(self, folder: Path) -> None:
        """Every folder from the git dir's parent to `folder` a real one (not a link that
        sends git to a git dir of the task's)."""
        for part in [folder, *folder.parents]:
            if part == self.git_dir.parent:
                return
            if not _real_dir(part):
                raise GitDirChanged(f"{part}: no longer a folder (a link?); git not run")

    def _forget(self, admin: Path) -> None:
        self.admins.discard(admin)
        for name in WORKTREE_FILES:
            self.saved.pop(admin / name, None)
            self.stamps.pop(admin / name, None)

    def _watched(self) -> list[Path]:
        """The saved paths, and any path now under a watched folder that was not saved (an
        added hook); parents before children."""
        paths = set(self.saved)
        for folder in self.folders:
            paths.update(_walk(folder))  # (none under a folder gone or made a link)
        return sorted(paths, key=lambda p: (len(p.parts), str(p)))

    def _restore_one(self, path: Path) -> bool:
        """`path` as saved (absent when it was not saved); whether it had differed."""
        wanted = self.saved.get(path, Entry("absent"))
        if not _real_dir(path.parent):  # its folder went with an earlier restore, or is gone
            if wanted.kind == "absent":
                return False
            _put(path.parent, self.saved.get(path.parent, Entry("dir", 0o755)))
        if _read(path) == wanted:
            self.stamps[path] = _stamp(path)  # touched, the same bytes: nothing to say
            return False
        _put(path, wanted)  # a swapped folder's entries come after it (parents first)
        self.stamps[path] = _stamp(path)
        return True


def _real_dir(path: Path) -> bool:
    return stat.S_ISDIR(_mode(path))


def describe(paths: Iterable[str]) -> str:
    return ", ".join(f".git/{p}" for p in paths)
