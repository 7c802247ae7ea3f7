"""Git for a job: one linked worktree and branch per task, an integration branch, merges.

Every command goes through `bashgym_procs.git` (hooks never run, no fsmonitor, pager, editor or
credential helper, no network, an environment free of BashGym's keys). The user's repository is
`trusted` (its own config stays: their filters still work); each task's worktree is written by
the task, so it is always addressed with its git dir given explicitly (`Repo.trusted(worktree,
admin_dir)`, the admin dir under the user's `.git/worktrees/` whose `gitdir` records the
worktree's path: git's own record, `_admin_of`): the `.git` file a task could rewrite is never
followed, neither to run git nor to decide what to reset or remove. Where the
environment does not keep tasks out of the user's `.git` (`local`), a `gitdir.GitDirGuard` puts
back its config, hooks and info before every command (`Repository.run`, the one way in).

The user's checked-out branch and working tree are never touched: worktrees live in the job
dir, branches are `bashgym/<job>/<task>`, and nothing is ever checked out in the user's tree.
Why the git CLI: see `bashgym_procs.git` (worktree and merge are only partly covered by
libraries, and a library reading `.git/config` faces the same attacks).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym_procs import git
from bashgym_procs.names import safe_name

from bashgym.contracts import InputError
from bashgym.records import Completed
from bashgym.text import condense, one_line
from bashgym_orchestrator.gitdir import GitDirChanged, GitDirGuard

AUTHOR = {"user.name": "BashGym orchestrator", "user.email": "orchestrator@bashgym.invalid"}


class GitError(RuntimeError):
    """A git command the orchestrator needs failed: one line with git's own words."""


class Uncommittable(GitError):
    """`git add` refused what a task left in its worktree (a repository of its own inside it
    with no commit, a file it cannot read, a name git will not take): the task's doing, unlike
    a timeout or a full disk (`tasks_doing`)."""


ADD_TRIES = 4  # `git worktree add` runs, where it failed on another's half-made admin dir

# what git says when the disk, not the task's files, is the trouble
DISK_TROUBLE = (
    "No space left on device",
    "Disk quota exceeded",
    "Read-only file system",
    "Input/output error",
)

# What `git add -A` says (git 2.x, read-cache.c and object-file.c) of a path in the worktree
# that the task left there and git cannot take: a repository with no commit, a file or link it
# cannot open or read, a name git refuses, something that is not a file. Anything else (the
# index, the object database, a signal) is not the task's, but for the index lock a git of the
# task's left (`lock_left`).
TASK_CAUSES = (
    "does not have a commit checked out",
    "error: open(",
    "error: readlink(",
    "read error while indexing ",
    "short read while indexing ",
    "': short read",
    "error: invalid path '",
    "can only add regular files, symbolic links or git-directories",
    "error: unable to stat '",
)
# what git says after one of those, of the same path
TASK_FOLLOWING = ("error: unable to index file '", "error: unable to add '", "fatal: adding files")

# The errors whose words say what was found (a git command's failure, a folder git will not
# run on, a .git that cannot be put back, bad input): a user reads them without a class name.
EXPLAINED: tuple[type[BaseException], ...] = (GitError, git.UnsafeRepo, GitDirChanged, InputError)


def in_words(exc: BaseException) -> str:
    """An error as one line for a user: the text alone for the errors that explain themselves
    (`EXPLAINED`); `Type: text` for anything else (`one_line`), where the type helps a bug
    report."""
    if isinstance(exc, EXPLAINED) and (text := condense(str(exc).splitlines())):
        return text
    return one_line(exc)


def branch_prefix(job: str) -> str:
    return f"bashgym/{safe_name(job)}"


def task_branch(job: str, task_id: str) -> str:
    return f"{branch_prefix(job)}/{safe_name(task_id)}"


def integration_branch(job: str) -> str:
    return f"{branch_prefix(job)}/integration"


@dataclass(frozen=True)
class Worktree:
    """A linked worktree: where it is, its branch, and its admin dir in the user's `.git`."""

    path: Path
    branch: str
    admin: Path

    @property
    def repo(self) -> git.Repo:
        return git.Repo.trusted(self.path, self.admin)


@dataclass(frozen=True)
class Diff:
    files: list[str]
    insertions: int
    deletions: int


@dataclass(frozen=True)
class Merged:
    outcome: str  # merged, conflicted, empty
    conflicts: list[str]
    commit: str | None
    output: str = ""


ADMIN_PARTS = (".git", "worktrees")  # where git keeps an admin dir per worktree


class Repository:
    """The user's repository, as the orchestrator uses it (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        root = Path(os.path.abspath(root))
        if not (root / ".git").is_dir() or (root / ".git").is_symlink():
            raise InputError(f"{root} is not a git checkout with a .git folder (git init it?)")
        self.root = root
        self.admin_root = root.joinpath(*ADMIN_PARTS)  # git's records of the worktrees
        self.main = git.Repo.trusted(root, root / ".git")
        self.guard: GitDirGuard | None = None
        # the admin dir git records for each worktree made or opened here (found by its
        # `gitdir`, `_admin_of`), by path, until the worktree is removed
        self.admins: dict[Path, str] = {}

    def protect(self, on_restore: Callable[[list[str]], None]) -> GitDirGuard:
        """Watch the user's git dir from now on (`gitdir`): what a task changes there is put
        back before each git command here; `on_restore` hears which paths were."""
        self.guard = GitDirGuard(self.root / ".git", on_restore)
        return self.guard

    async def run(self, repo: git.Repo, *args: str, **options: Any) -> Completed:
        """`git.run`, after the guard (if any) put the user's git dir back: every git command
        of a job goes through here, so none reads a config, hook or attribute a task wrote."""
        if self.guard is not None:
            try:
                self.guard.restore()
            except (GitDirChanged, OSError) as exc:
                raise GitError(
                    f"the repository's .git cannot be put back: {in_words(exc)}"
                ) from None
        return await git.run(repo, *args, **options)

    async def git(self, *args: str, repo: git.Repo | None = None, timeout: float = 300) -> str:
        """`git args` (on the main repository unless `repo`); GitError with git's words."""
        done = await self.run(repo or self.main, *args, config=AUTHOR, timeout=timeout)
        if not done.ok:
            words = " ".join(done.output.strip().splitlines()[-3:]) or done.reason
            raise GitError(f"git {args[0]} failed: {words}")
        return done.output.strip()

    async def commit_of(self, ref: str) -> str:
        """The commit `ref` names (InputError when it names none)."""
        if ref.startswith("-"):
            raise InputError(f"{ref!r} is not a branch or commit")
        done = await self.run(self.main, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        if not done.ok:
            raise InputError(f"{ref!r} is not a branch or commit of {self.root}")
        return done.output.strip()

    async def current_branch(self) -> str:
        """The branch checked out in the user's tree (the default base), else its commit."""
        done = await self.run(self.main, "symbolic-ref", "--quiet", "--short", "HEAD")
        return done.output.strip() if done.ok else await self.commit_of("HEAD")

    async def add_worktree(self, path: Path, branch: str, start: str) -> Worktree:
        """A fresh worktree at `path` on `branch`, (re)set to `start`; what an earlier attempt
        left there (a killed run's) is removed first."""
        await self.remove_worktree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        await self._add(path, "-B", branch, "--", str(path), start)
        return self._watched(Worktree(path, branch, self._admin_of(path)))

    async def open_worktree(self, path: Path, branch: str, start: str) -> Worktree:
        """The worktree at `path` on `branch` if it is there as git made it, else a new one
        from `start` (the branch is kept when it exists: the integration branch across
        resumes). A task may have worked there (the conflict-resolving worker's workspace is
        the integration worktree), so its `.git` file is never followed: the worktree is kept
        only when git records exactly one admin dir for `path`, that admin dir's HEAD is
        `branch` and the `.git` file names it (`_intact`); anything else is removed and made
        again, so a `.git` rewritten to name another worktree's admin dir (a user's) sends no
        reset or removal there."""
        if (admin := self._intact(path, branch)) is not None:
            return self._watched(Worktree(path, branch, admin))
        await self.remove_worktree(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        exists = await self.run(
            self.main, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"
        )
        args = [str(path), branch] if exists.ok else ["-b", branch, "--", str(path), start]
        if exists.ok:
            args = ["--", *args]
        await self._add(path, *args)
        return self._watched(Worktree(path, branch, self._admin_of(path)))

    async def _add(self, path: Path, *args: str) -> None:
        """`git worktree add --quiet args` for the worktree at `path`. git reads every admin dir
        under `.git/worktrees/` as it adds one, and fails on one another `worktree add` has
        half made ("failed to read .../commondir": tasks starting together, another job, the
        user): that failure is tried again (what it left removed first), up to ADD_TRIES
        times; one at a time instead would queue every task's checkout behind the others'."""
        for tries in range(1, ADD_TRIES + 1):
            try:
                await self.git("worktree", "add", "--quiet", *args)
                return
            except GitError as exc:
                if tries == ADD_TRIES or not _half_made(str(exc)):
                    raise
            await self.remove_worktrees([path])
            await asyncio.sleep(0.05 * tries)

    def _intact(self, path: Path, branch: str) -> Path | None:
        """The admin dir of the worktree at `path` when it is as git made it for `branch`:
        one admin dir records `path` (git's own record, in the user's `.git`), its HEAD names
        `branch`, and `path/.git` (read without following a link) names that admin dir."""
        admin = self._sole_admin(path)
        if admin is None:
            return None
        head = _small_file(admin / "HEAD")
        if head is None or head.strip() != f"ref: refs/heads/{branch}":
            return None
        said = _small_file(path / ".git")
        named = (said or "").strip().removeprefix("gitdir:").strip()
        real = os.path.realpath(admin)
        return admin if said is not None and named in (str(admin), real) else None

    def _watched(self, tree: Worktree) -> Worktree:
        """`tree`, its admin dir's files watched by the guard as git just made them (and its
        admin dir the job's own: `remove_strays` leaves it while the worktree is there)."""
        self.admins[tree.path] = tree.admin.name
        if self.guard is not None:
            self.guard.watch_worktree(tree.admin)
        return tree

    def _admin_of(self, path: Path) -> Path:
        """The admin dir git just made for the worktree at `path`: the one under this
        repository's `.git/worktrees/` whose `gitdir` records `path` (git's own record, never
        the `.git` file in the worktree), exactly one."""
        admin = self._sole_admin(path)
        if admin is None:
            found = ", ".join(sorted(self._recording(path))) or "none"
            raise GitError(f"{path}: git should record one worktree there, found {found}")
        return admin

    def _sole_admin(self, path: Path) -> Path | None:
        """The one admin dir whose `gitdir` records `path`; None when none or several do."""
        names = self._recording(path)
        return self.admin_root / names.pop() if len(names) == 1 else None

    async def remove_worktree(self, path: Path) -> list[str]:
        """Remove the worktree at `path` (its branch stays) and git's record of it; what could
        not be removed, in words. A path that is not there and that git has no record of
        costs no git command (every new task's worktree). Never `git worktree prune`: see
        `remove_worktrees`."""
        if path.exists() or os.path.islink(path):  # git's way first: it knows its own files
            await self.run(self.main, "worktree", "remove", "--force", "--force", str(path))
        return await self.remove_worktrees([path])  # what git could not (or had no record of)

    async def remove_worktrees(self, paths: list[Path]) -> list[str]:
        """Remove the worktrees at `paths` (their branches stay) and git's records of them,
        with no git command: at a job's end, `remove_worktree` for each was two git commands a
        task (bench/orchestrator.py (d): ~1 s of a 5-task job's wall). The folders are deleted
        without following links (shutil.rmtree), as `remove_worktree` does when git cannot.
        One that cannot be deleted stops none of the rest; what could not, in words.

        A record goes when its `gitdir` names one of `paths` (git's own record, in the user's
        `.git`: a worktree's `.git` file is never read), never by `git worktree prune`: prune
        drops every record whose folder is missing, a worktree of the user's on an unmounted
        disk too."""
        records = self.records()
        names: set[str] = set()
        failed: list[str] = []
        for path in paths:
            made = self.admins.pop(path, None)  # forgotten: a later worktree may get its name
            if made is not None and self.guard is not None:
                self.guard.unwatch_worktree(self.admin_root / made)
            names |= self._recording(path, records)
            if os.path.islink(path):
                path.unlink()
            elif path.exists():
                await asyncio.to_thread(shutil.rmtree, path, True)
                if os.path.lexists(path):
                    failed.append(f"{path} (not all of it could be deleted)")
        if names:
            gone = await asyncio.to_thread(remove_entries, self.root, ADMIN_PARTS, only=names)
            failed += [f"{self.root / '.git' / 'worktrees' / f}" for f in gone.failed]
        return failed

    def admin_names(self) -> set[str]:
        """The names under `.git/worktrees/` now, one admin dir per worktree git records (the
        names only: nothing in them is read). A job's snapshot, for `remove_strays` to say
        which worktrees were added while it ran."""
        try:
            return set(os.listdir(self.admin_root))
        except OSError:
            return set()

    async def remove_strays(self, folder: Path, own: Iterable[Path], before: set[str]) -> Strays:
        """Unregister every worktree git records inside `folder` (the job's worktrees folder,
        every path in it the job's) other than those at `own` paths that are still there (the
        job's own worktrees it keeps): those its tasks made with their own `git worktree add`,
        locked ones too, this run's or a killed one's. Decided by what each record says (its
        `gitdir`), not by when it was made: a worktree another job or the user adds while this
        job runs records a path outside `folder` and is never touched; those added since
        `before` (`admin_names`) outside `folder` are only said (`Strays.outside`), since a
        task's `git worktree add /elsewhere` and a user's look the same.

        Only the admin dir in the user's `.git/worktrees/` goes (that is git's record), opened
        without following a link (a task could have swapped `.git/worktrees` for one). Neither
        `git worktree remove` (it deletes the folder the record names, a path the task wrote)
        nor `prune` (it drops any record whose folder is missing: a worktree of the user's on
        an unmounted disk) is used; the folder stays where the task put it (the caller clears
        `folder`). Run at the job's end, when no task runs. Under `local` a task can write the
        user's `.git`, the records included; only bubblewrap keeps them out of its reach."""
        records = self.records()
        inside = [os.path.abspath(folder), os.path.realpath(folder)]
        kept: set[str] = set()
        for path in own:
            if os.path.isdir(path) and not os.path.islink(path):
                kept |= self._recording(path, records)
        ours = {n for n, at in records.items() if _under(at, inside) and n not in kept}
        gone = await asyncio.to_thread(remove_entries, self.root, ADMIN_PARTS, only=ours)
        known = before | ours | kept | set(self.admins.values())
        outside = sorted(at for name, at in records.items() if at and name not in known)
        failed = [f"{self.admin_root / f}" for f in gone.failed]
        return Strays(len(gone.removed), outside, failed)

    def records(self) -> dict[str, str]:
        """Each admin dir under `.git/worktrees/` and the worktree path its `gitdir` records
        ('' when it has none that can be read): git's own record, read without a process."""
        try:
            entries = list(os.scandir(self.admin_root))
        except OSError:
            return {}
        found = {}
        for entry in entries:
            recorded = (_small_file(Path(entry.path, "gitdir")) or "").strip()
            if recorded:  # `.../wt/.git`; relative to the admin dir with worktree.useRelativePaths
                recorded = os.path.dirname(os.path.normpath(os.path.join(entry.path, recorded)))
            found[entry.name] = recorded
        return found

    def _recording(self, path: Path, records: dict[str, str] | None = None) -> set[str]:
        """The admin dirs under `.git/worktrees/` whose `gitdir` records `path` (`records`,
        read now unless given): also one whose folder was deleted (`git worktree add` refuses
        that path until its record goes). git records the real path (links resolved): the
        folder's parent is resolved, the folder itself never (a task could have made it a
        link to a worktree of the user's)."""
        wanted = {os.path.abspath(path), os.path.join(os.path.realpath(path.parent), path.name)}
        records = self.records() if records is None else records
        return {name for name, at in records.items() if at and at in wanted}

    async def unused_job_name(self, name: str) -> str:
        """`name`, or `name-2`, `name-3`, ... : the first no branch `bashgym/<name>/...` (nor
        `bashgym/<name>` itself, which would block them) uses: two jobs never share branches,
        whatever their folders are called. One `for-each-ref` lists the branches; GitError
        when it fails (a broken packed-refs: asking again would fail again)."""
        refs = await self.git("for-each-ref", "--format=%(refname)", "refs/heads/bashgym/")
        used = {
            "/".join(ref.split("/")[2:4])
            for ref in refs.splitlines()
            if ref.startswith("refs/heads/bashgym/")
        }
        base = safe_name(name)
        for n in range(1, len(used) + 2):  # len(used) names at most are taken
            candidate = base if n == 1 else f"{base[:60]}-{n}"
            if branch_prefix(candidate) not in used:
                return candidate
        raise GitError(f"no job name like {base!r} is free")  # never: see the range

    async def rename_branch(self, old: str, new: str) -> None:
        await self.git("branch", "-M", old, new)

    async def tip(self, tree: Worktree) -> str:
        return await self.git("rev-parse", "HEAD", repo=tree.repo)

    async def commit_all(self, tree: Worktree, message: str, keep_out: list[str]) -> bool:
        """Commit what the worker left uncommitted (the files in `keep_out`, copied in for it,
        excepted); False when there was nothing. Uncommittable when `git add` refuses what the
        task left (`tasks_doing`), or cannot run for the index lock a git of the task's left
        (`lock_left`); GitError for anything else (a timeout, a signal, a full disk, the
        index, the guard)."""
        added = await self.run(tree.repo, "add", "-A", "--", ".", config=AUTHOR, timeout=300)
        if not added.ok:
            lines = added.output.strip().splitlines()
            said = [line for line in lines if line.startswith(("error:", "fatal:"))]
            words = " ".join((said or lines)[-3:]) or added.reason
            if lock_left(tree, added):
                raise Uncommittable(_lock_words(tree))
            if tasks_doing(added):
                raise Uncommittable(f"git add failed: {words}")
            raise GitError(f"git add failed: {words}")
        if keep_out:  # the copied files (.env, ...) go back to what the branch holds
            await self.run(tree.repo, "reset", "--quiet", "--", *keep_out)
        done = await self.run(
            tree.repo, "commit", "--quiet", "--no-verify", "-m", message, config=AUTHOR
        )
        if done.ok:
            return True
        if "nothing to commit" in done.output or "nothing added to commit" in done.output:
            return False
        raise GitError(f"git commit failed: {' '.join(done.output.strip().splitlines()[-3:])}")

    async def diff(self, tree: Worktree, start: str) -> Diff:
        """Files changed on the worktree's branch since `start`, with line counts."""
        out = await self.git("diff", "--numstat", "-z", f"{start}..HEAD", repo=tree.repo)
        files: list[str] = []
        added = removed = 0
        fields = iter(out.split("\0"))
        for entry in fields:
            if not entry.strip():
                continue
            plus, minus, name = [*entry.split("\t", 2), "", ""][:3]
            if not name:  # a rename: -z puts its two paths in the next fields
                next(fields, None)
                name = next(fields, "")
            files.append(name)
            added += int(plus) if plus.isdigit() else 0
            removed += int(minus) if minus.isdigit() else 0
        return Diff(files, added, removed)

    async def merge(
        self, into: Worktree, branch: str, message: str, before: str | None = None
    ) -> Merged:
        """Merge `branch` into the worktree `into` with `--no-ff`; a conflict is aborted, and
        the conflicting files are said (the branch is left as it is). `before`: `into`'s
        HEAD when the caller knows it (one git command fewer)."""
        before = before or await self.tip(into)
        done = await self.run(
            into.repo,
            "merge",
            "--no-ff",
            "--no-edit",
            "-m",
            message,
            "--",
            branch,
            config=AUTHOR,
            timeout=300,
        )
        if done.ok:
            after = await self.tip(into)
            return Merged("empty" if after == before else "merged", [], after, done.output)
        conflicts = await self.conflicts(into)
        await self.run(into.repo, "merge", "--abort")
        await self.run(into.repo, "reset", "--hard", "--quiet", before)
        if not conflicts:
            raise GitError(f"git merge failed: {done.output.strip()[-300:]}")
        return Merged("conflicted", conflicts, None, done.output)

    async def conflicts(self, tree: Worktree) -> list[str]:
        done = await self.run(tree.repo, "diff", "--name-only", "-z", "--diff-filter=U")
        return [p for p in done.output.split("\0") if p.strip()] if done.ok else []

    async def start_merge(self, into: Worktree, branch: str, message: str) -> list[str]:
        """Start merging `branch` and leave its conflicts in the tree (for a worker to resolve);
        the conflicting files."""
        await self.run(
            into.repo,
            "merge",
            "--no-ff",
            "--no-commit",
            "-m",
            message,
            "--",
            branch,
            config=AUTHOR,
            timeout=300,
        )
        return await self.conflicts(into)

    async def finish_merge(self, into: Worktree, message: str) -> str | None:
        """Commit a merge a worker resolved; None (and the merge aborted) when a conflict
        marker or an unmerged path is left. Uncommittable when the resolver's own git left the
        index lock (`lock_left`): the merge stays as it is (git cannot abort it either)."""
        added = await self.run(into.repo, "add", "-A", "--", ".")
        if not added.ok and lock_left(into, added):
            raise Uncommittable(_lock_words(into))
        left = await self.conflicts(into)
        markers = await self.run(into.repo, "diff", "--cached", "--check")
        if left or "conflict marker" in markers.output:
            await self.run(into.repo, "merge", "--abort")
            return None
        await self.git("commit", "--quiet", "--no-verify", "-m", message, repo=into.repo)
        return await self.tip(into)

    async def reset_to(self, tree: Worktree, commit: str) -> None:
        """Put the worktree back at `commit` (a merge a killed run left half done is undone)."""
        await self.run(tree.repo, "merge", "--abort")
        await self.git("reset", "--hard", "--quiet", commit, repo=tree.repo)


@dataclass(frozen=True)
class Strays:
    """What `Repository.remove_strays` did: how many records it removed, the worktrees added
    outside the job's folder while it ran (left registered), what could not be removed."""

    removed: int
    outside: list[str]
    failed: list[str]


@dataclass(frozen=True)
class Removal:
    """What `remove_entries` did: the names removed, and `name (why)` for those that could not
    be (wholly) removed."""

    removed: list[str]
    failed: list[str]


def remove_entries(
    base: Path, parts: tuple[str, ...], keep: Iterable[str] = (), only: Iterable[str] | None = None
) -> Removal:
    """Remove every entry of the folder `base/parts...` whose name is not in `keep` (and, given
    `only`, is in it). Each of `parts` is opened without following a link, and so is each
    entry (a link goes as a link, a folder with all it holds: shutil.rmtree by fd follows
    none): a task that swapped a folder on the way for a link to the user's files sends
    nothing there. An entry that cannot be wholly removed (a file the OS will not delete) is
    said in `failed` and the rest still go."""
    only = None if only is None else set(only)
    removal = Removal([], [])
    if only is not None and not only:
        return removal
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return removal
    try:
        for part in parts:
            inner = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError:  # not there (no worktree was ever made), or a link: nothing to remove
        os.close(fd)
        return removal
    try:
        names = set(os.listdir(fd)).difference(keep)
        for name in sorted(names if only is None else names & only):
            errors: list[OSError] = []
            try:
                mode = os.lstat(name, dir_fd=fd).st_mode
                if stat.S_ISDIR(mode):
                    shutil.rmtree(name, dir_fd=fd, onerror=_collect(errors))
                else:
                    os.unlink(name, dir_fd=fd)
            except FileNotFoundError:
                continue
            except OSError as exc:
                errors.append(exc)
            if errors:
                removal.failed.append(f"{name} ({errors[0].strerror or errors[0]})")
            else:
                removal.removed.append(name)
    finally:
        os.close(fd)
    return removal


def _collect(errors: list[OSError]) -> Callable[..., None]:
    """An `onerror` for shutil.rmtree that keeps each error and lets it go on."""

    def onerror(_function: Any, _path: Any, info: Any) -> None:
        errors.append(info[1])

    return onerror


def lock_left(tree: Worktree, added: Completed) -> bool:
    """Whether a failed `git add` in the task's worktree `tree` failed on the index lock in its
    admin dir, which is there: a git the task ran itself left it (killed half way, by its
    command's timeout; or one of its processes still holds it), since no git of the job's
    runs in a task's worktree before this `add` but `worktree add`, which finished. The task's
    doing (Uncommittable: a failed attempt), never mended by deleting the lock and going on in
    that worktree: nothing here can tell that no process of the task's holds it (a daemon it
    started, a worker on another node). The worktree goes whole, as any failed attempt's, and
    the next attempt starts in a fresh one."""
    lock = tree.admin / "index.lock"
    named = (f"'{lock}': File exists", f"'{os.path.realpath(lock)}': File exists")
    return not added.timed_out and any(n in added.output for n in named) and os.path.lexists(lock)


def _lock_words(tree: Worktree) -> str:
    return (
        f"a git command the task ran left .git/worktrees/{tree.admin.name}/index.lock behind "
        "(stopped before it finished, by a timeout most likely), and git adds nothing while it "
        "is there"
    )


def tasks_doing(added: Completed) -> bool:
    """Whether a failed `git add -A` failed on what the task left in its worktree (Uncommittable:
    a failed attempt, retried): git exited by itself, said no disk trouble, named at least one
    of `TASK_CAUSES` and nothing but those and what follows them (`TASK_FOLLOWING`). Anything
    else is the job's (a GitError: the task is not paid for again): a timeout or a git killed
    by a signal, a full disk, `unable to write new index file`, an object git could not
    write, words git may say some day that are not listed. (The index lock a git of the
    task's left is the task's too: `lock_left`, asked first.)"""
    if added.timed_out or added.exit_code is None or added.exit_code <= 0:
        return False
    if any(t in added.output for t in DISK_TROUBLE):
        return False
    said = [line for line in added.output.splitlines() if line.startswith(("error:", "fatal:"))]
    causes = [line for line in said if any(c in line for c in TASK_CAUSES)]
    return bool(causes) and all(line in causes or line.startswith(TASK_FOLLOWING) for line in said)


# git (setup.c) on an admin dir whose `commondir` `git worktree add` has made but not yet
# written: `failed to read /repo/.git/worktrees/<id>/commondir: Success` (or relative to the
# repository). Every job's task worktrees are under a `worktrees` folder too: only git's own
# admin dir's file counts.
HALF_MADE = re.compile(r"failed to read (?:[^\n]*/)?\.git/worktrees/[^/\n]+/commondir(?::|$)", re.M)


def _half_made(words: str) -> bool:
    """Whether git failed on another worktree's admin dir being made as it read it."""
    return HALF_MADE.search(words) is not None


def _under(path: str, folders: list[str]) -> bool:
    """Whether `path` (as a record says it) names something inside one of `folders`."""
    path = os.path.normpath(path) if path else ""
    return bool(path) and any(path.startswith(folder.rstrip("/") + "/") for folder in folders)


def _small_file(path: Path, limit: int = 65536) -> str | None:
    """A small regular file's text, opened without following a link or waiting on a FIFO;
    None when it is not one (or cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def copy_files(repo: Path, tree: Path, names: list[str]) -> list[str]:
    """Copy the spec's `copy` files (`.env`, ...) from the user's checkout into a worktree;
    the ones copied. A name that leaves either folder is refused (InputError).

    The worktree starts from the integration branch, which holds whatever earlier tasks
    committed: `.env` may be a link to the user's `~/.bashrc`, `conf` (of `conf/a.env`) a
    link to a folder of theirs. So no link in the worktree is ever followed: the target is
    reached from the worktree's root one part at a time, each folder opened by a descriptor
    relative to the one before with O_NOFOLLOW (`_open_folders`), a link, file or folder in
    the way removed (in the worktree: nothing outside it is touched) and made again as a real
    folder, and each file created with O_CREAT | O_EXCL | O_NOFOLLOW after its name was
    cleared (`_copy_into`), a folder's files the same way. The standard library's
    descriptor-relative calls do this; shutil's copy2 and copytree open destinations by path
    and follow links there, and no library here resolves a path inside a root without
    following links (libpathrs is Linux only and young). The user's checkout is the user's:
    its own links are copied as links, as `cp -P` would.

    A link in the way that an earlier task committed is replaced in this worktree only; the
    worktree's `git add` then stages its removal (a link at the copied name itself goes back
    to what the branch holds, with the copied files)."""
    copied = []
    for name in names:
        source, target = (Path(os.path.normpath(root / name)) for root in (repo, tree))
        for root, path in ((repo, source), (tree, target)):
            if os.path.commonpath([root, path]) != str(root) or path == root:
                raise InputError(f"copy: {name!r} is not a path inside the repository")
        if not source.exists():
            continue
        parts = target.relative_to(tree).parts
        fd = _open_folders(tree, parts[:-1])
        try:
            _copy_into(str(source), fd, parts[-1], follow=True)
        finally:
            os.close(fd)
        copied.append(Path(name).as_posix())
    return copied


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_folders(root: Path, parts: tuple[str, ...]) -> int:
    """A descriptor of the folder `root/parts...`, each part opened relative to the one before
    without following a link; a part that is missing is made, one that is not a real folder
    (a link, a file) is removed first (`_clear`). The caller closes it."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the job's own folder
    try:
        for part in parts:
            try:
                inner = os.open(part, _FOLDER, dir_fd=fd)
            except OSError:  # missing, a link, a file: made a real folder
                _clear(fd, part)
                os.mkdir(part, 0o777, dir_fd=fd)
                inner = os.open(part, _FOLDER, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def _copy_into(source: str, fd: int, name: str, follow: bool = False) -> None:
    """Copy `source` (the user's: a file, a link, a folder and all it holds) to `name` in the
    folder open as `fd`, following no link on that side: what is at `name` goes first unless
    both are folders (their contents then merge, as copytree's dirs_exist_ok). Links are
    copied as links, except that with `follow` a link at `source` to a folder is copied as
    that folder (copy2 and copytree did so for a copy name). Anything else (a FIFO, a
    socket) is left out."""
    info = os.lstat(source)
    if follow and stat.S_ISLNK(info.st_mode) and os.path.isdir(source):
        info = os.stat(source)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        try:
            inner = os.open(name, _FOLDER, dir_fd=fd)
        except OSError:
            _clear(fd, name)
            os.mkdir(name, 0o700, dir_fd=fd)
            inner = os.open(name, _FOLDER, dir_fd=fd)
        try:
            for entry in sorted(os.listdir(source)):
                _copy_into(os.path.join(source, entry), inner, entry)
            os.chmod(inner, stat.S_IMODE(mode))
        finally:
            os.close(inner)
    elif stat.S_ISLNK(mode):
        _clear(fd, name)
        os.symlink(os.readlink(source), name, dir_fd=fd)
    elif stat.S_ISREG(mode):
        _clear(fd, name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        out = os.open(name, flags, 0o600, dir_fd=fd)
        with open(source, "rb") as src, os.fdopen(out, "wb") as dst:
            shutil.copyfileobj(src, dst)
            dst.flush()
            os.chmod(out, stat.S_IMODE(mode))
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))


def _clear(fd: int, name: str) -> None:
    """Remove whatever is at `name` in the folder open as `fd`, following no link: a link or
    file is unlinked, a folder removed with all it holds (shutil.rmtree by descriptor)."""
    try:
        mode = os.lstat(name, dir_fd=fd).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISDIR(mode):
        shutil.rmtree(name, dir_fd=fd)
    else:
        os.unlink(name, dir_fd=fd)
