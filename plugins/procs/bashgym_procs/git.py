"""Git on a folder a task could write, without ever running anything the task wrote.

After (and around) a task BashGym runs git on its workspace on the host: `status` for the
files it changed today, and diff, commit, worktree and merge for an orchestrator. A task can
write `.git/config` (`core.fsmonitor`, `core.pager`, `diff.external`, `filter.<x>.clean`,
`include.path`, ...), hooks, `.gitattributes`, `.gitmodules`, a nested repository, or make
`.git` a file or a symlink pointing elsewhere; a plain `git status` would then run the task's
program outside the sandbox, as BashGym's user, with its environment. Every git command
BashGym runs on such a folder goes through `run` here, which holds this policy:

1. **Layout** (`Repo.untrusted`, the task could write the git dir): the work tree and `.git`
   are real folders (no symlink; a `.git` *file* — `gitdir: /elsewhere` — is refused, never
   followed); nothing inside `.git` is a symlink, a FIFO or a device, and it holds at most
   `MAX_GIT_ENTRIES` entries; no `commondir` (a linked worktree's pointer to another repo);
   `objects/info/alternates` only name folders inside the work tree.
2. **Config** (untrusted): `.git/config` is read once (no includes followed) and, when it holds
   any key outside `KEPT_KEYS` (plain data: the repository format, a few core flags, remotes'
   url/fetch, branches' upstream, user name/email), it is rewritten with only those keys — so no
   filter, diff or merge driver, include, fsmonitor, hooks path, pager, editor, ssh command,
   gpg program, credential helper or alias is left to run, whatever its name.
3. **Submodules** (both kinds): git runs a submodule's own git, with that submodule's config,
   to see whether it is dirty. A gitlink in the index whose folder holds a `.git` is refused;
   `diff.ignoreSubmodules=all` and `submodule.recurse=false` are set on top.
4. **Every command** (both kinds) runs with `OVERRIDES` on its command line (the highest
   config scope, inherited by any git it starts): no fsmonitor, hooks from `/dev/null`, `cat`
   as pager, `:` as editor, no gpg signing, no credential helper, no protocol (no network), no
   automatic gc; `GIT_DIR` and `GIT_WORK_TREE` set (so `core.worktree` and discovery play no
   part); system and global config, system attributes and `$HOME` ignored; pathspecs literal;
   and an environment built from nothing but these and a cleaned `PATH` — BashGym's API keys
   never reach git. `safe.directory=*` on the command line lets git read a workspace another
   uid wrote (the checks above are what make it safe to).

`Repo.trusted(work_tree, git_dir)` is for a git dir the task cannot write (an orchestrator's
own repository, with the task's linked worktree as `work_tree`): its config is the user's and
is kept (their filters, e.g. git-lfs, still run), the rest of the policy holds — hooks never
run, since a hook (or the `pre-commit` framework it starts) would read files the task wrote.

What it cannot do: a process still running in the workspace could change `.git` between the
checks and git's start. Run it once the task's processes are gone (closing a bubblewrap
session ends its whole PID namespace), or give git a dir the task cannot reach (`trusted`).
Names from data used as arguments (branches, paths) go through `bashgym_procs.names.safe_name`
or after `--`.

Why the git CLI and not a library: the orchestrator needs worktree and merge, which pygit2 /
dulwich cover only in part, and a library that reads `.git/config` faces the same attacks; one
audited set of flags around the real git is smaller.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import bashgym_procs as procs
from bashgym.records import Completed

MAX_GIT_ENTRIES = 200_000
MAX_CONFIG_BYTES = 1_000_000
MAX_KEPT_ENTRIES = 500

# Highest-precedence config for every command (see the module docstring, point 4).
OVERRIDES: tuple[tuple[str, str], ...] = (
    ("safe.directory", "*"),
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    ("core.sshCommand", "false"),
    ("credential.helper", ""),  # the empty value empties the list of helpers
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("merge.verifySignatures", "false"),
    ("gpg.program", "false"),
    ("protocol.allow", "never"),
    ("protocol.ext.allow", "never"),  # a protocol's own setting would beat protocol.allow
    ("protocol.file.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("fetch.recurseSubmodules", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)

# Keys an untrusted `.git/config` may keep: plain data, none names a program (point 2).
KEPT_KEYS = re.compile(
    r"core\.(repositoryformatversion|filemode|bare|logallrefupdates|symlinks|ignorecase"
    r"|precomposeunicode|autocrlf|eol|safecrlf)"
    r"|extensions\.objectformat"
    r"|remote\..+\.(url|fetch)"
    r"|branch\..+\.(remote|merge)"
    r"|user\.(name|email)",
    re.DOTALL,
)


class UnsafeRepo(Exception):
    """The folder is not one git may run on: the reason says what was found."""


@dataclass(frozen=True)
class Repo:
    """A work tree and its git dir; `trusted` when the task cannot write the git dir."""

    work_tree: Path
    git_dir: Path
    trusted: bool

    @classmethod
    def untrusted(cls, work_tree: Path | str) -> Repo:
        """The repository at `work_tree/.git`, all of which the task could have written."""
        work_tree = Path(os.path.abspath(work_tree))
        return cls(work_tree, work_tree / ".git", trusted=False)

    @classmethod
    def trusted(cls, work_tree: Path | str, git_dir: Path | str) -> Repo:
        """`work_tree` (task-written) checked out from `git_dir` (out of the task's reach)."""
        return cls(Path(os.path.abspath(work_tree)), Path(os.path.abspath(git_dir)), trusted=True)


async def run(
    repo: Repo,
    *args: str,
    config: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 120,
    output_limit: int = 64_000,
    stdin: bytes | None = None,
) -> Completed:
    """`git <args>` on `repo` under the policy of this module; UnsafeRepo when the folder
    fails a check. `config` adds `-c` settings after the policy's (e.g. user.name for a
    commit); `env` adds variables (e.g. GIT_AUTHOR_DATE)."""
    await prepare(repo)
    return await _git(repo, args, config=config, env=env, timeout=timeout,
                      output_limit=output_limit, stdin=stdin)  # fmt: skip


async def prepare(repo: Repo) -> list[str]:
    """Check `repo` and sanitize an untrusted config; the config keys dropped, if any."""
    dropped: list[str] = []
    if not repo.trusted:
        await asyncio.to_thread(check_layout, repo)
        dropped = await _sanitize_config(repo)
    elif not _real_dir(repo.work_tree):
        raise UnsafeRepo(f"{repo.work_tree}: not a folder (or a symlink)")
    await _check_submodules(repo)
    return dropped


async def changed_paths(repo: Repo) -> list[str]:
    """Paths `git status` reports changed, added or untracked (a rename's new path)."""
    done = await run(repo, "status", "--porcelain=v1", "-z", timeout=60, output_limit=4_000_000)
    if not done.ok:
        raise UnsafeRepo(f"git status failed ({done.reason}): {done.output.strip()[:300]}")
    paths, fields = [], iter(done.output.split("\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        paths.append(entry[3:])
        if entry[0] in "RC":  # -z: a rename's or copy's source follows as its own field
            next(fields, None)
    return paths


# --- point 1: the layout of an untrusted repository -----------------------------------------


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _unreadable(exc: OSError) -> None:
    raise UnsafeRepo(f"{exc.filename}: cannot be read ({exc.strerror})")


def check_layout(repo: Repo) -> None:
    """UnsafeRepo unless `repo.git_dir` is a plain folder of plain files inside the work tree."""
    if not _real_dir(repo.work_tree):
        raise UnsafeRepo(f"{repo.work_tree}: not a folder (or a symlink)")
    if repo.git_dir != repo.work_tree / ".git":
        raise UnsafeRepo(f"{repo.git_dir}: an untrusted git dir must be the work tree's .git")
    if not _real_dir(repo.git_dir):
        kind = "a symlink" if os.path.islink(repo.git_dir) else "not a folder"
        raise UnsafeRepo(f"{repo.git_dir}: {kind} (a .git file or link is never followed)")
    count = 0
    for folder, dirs, files in os.walk(repo.git_dir, onerror=_unreadable):
        for name in dirs + files:
            count += 1
            mode = os.lstat(os.path.join(folder, name)).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                what = "a symlink" if stat.S_ISLNK(mode) else "not a plain file"
                raise UnsafeRepo(f"{os.path.join(folder, name)}: {what} inside .git")
        if count > MAX_GIT_ENTRIES:
            raise UnsafeRepo(f"{repo.git_dir}: over {MAX_GIT_ENTRIES:,} entries")
    if (repo.git_dir / "commondir").exists():
        raise UnsafeRepo(f"{repo.git_dir}: has a commondir (it points at another repository)")
    alternates = repo.git_dir / "objects" / "info" / "alternates"
    if alternates.is_file():
        root = os.path.realpath(repo.work_tree)
        for line in alternates.read_text(errors="replace").splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            real = os.path.realpath(repo.git_dir / "objects" / line.strip())
            if os.path.commonpath([root, real]) != root:
                raise UnsafeRepo(f"{alternates}: names {line.strip()!r}, outside the work tree")


# --- point 2: an untrusted config keeps only plain data -------------------------------------


def _read_config(git_dir: Path) -> bytes | None:
    try:  # no symlink followed, and a FIFO does not block us
        fd = os.open(git_dir / "config", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UnsafeRepo(f"{git_dir / 'config'}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeRepo(f"{git_dir / 'config'}: not a plain file")
        data = fh.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise UnsafeRepo(f"{git_dir / 'config'}: over {MAX_CONFIG_BYTES:,} bytes")
    return data


async def _sanitize_config(repo: Repo) -> list[str]:
    """Rewrite `.git/config` with only KEPT_KEYS when it holds anything else; the keys
    dropped. Git itself parses the copy we read (its format has no other reference parser)."""
    data = await asyncio.to_thread(_read_config, repo.git_dir)
    if data is None:
        return []
    with tempfile.TemporaryDirectory(prefix="bashgym-git-") as tmp:
        copy = Path(tmp) / "config"
        copy.write_bytes(data)
        done = await _git_config(tmp, "--file", str(copy), "--no-includes", "--null", "--list")
        if not done.ok:
            raise UnsafeRepo(f"{repo.git_dir / 'config'}: git cannot read it: {done.output[:200]}")
        entries = [_entry(e) for e in done.output.split("\0") if e]
        kept = [(k, v) for k, v in entries if KEPT_KEYS.fullmatch(k)]
        dropped = sorted({k for k, _ in entries if not KEPT_KEYS.fullmatch(k)})
        if not dropped:
            return []
        if len(kept) > MAX_KEPT_ENTRIES:  # each costs a `git config` below
            raise UnsafeRepo(f"{repo.git_dir / 'config'}: over {MAX_KEPT_ENTRIES} entries")
        clean = Path(tmp) / "clean"
        clean.write_bytes(b"")
        for key, value in kept:  # git quotes each value the way it reads it back
            done = await _git_config(tmp, "--file", str(clean), "--add", "--", key, value)
            if not done.ok:
                raise UnsafeRepo(f"cannot keep {key} of {repo.git_dir / 'config'}: {done.output}")
        cleaned = clean.read_bytes()
    await asyncio.to_thread(_replace_config, repo.git_dir, cleaned)
    return dropped


def _entry(text: str) -> tuple[str, str]:
    key, _, value = text.partition("\n")  # `--null`: key, newline, value; a bare key is true
    return key, value if "\n" in text else "true"


def _replace_config(git_dir: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".bashgym-config-", dir=git_dir)  # O_EXCL: no link followed
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, git_dir / "config")  # a rename: a hard link's other name is untouched
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UnsafeRepo(f"{git_dir / 'config'}: cannot rewrite it: {exc.strerror}") from None


async def _git_config(cwd: str, *args: str) -> Completed:
    """`git config` on a file in `cwd`, with no repository around it."""
    env = _env({"GIT_CEILING_DIRECTORIES": os.path.dirname(cwd)})
    return await procs.run([_git_path(env), *_global_options(), "config", *args],
                           cwd=cwd, env=env, timeout=30)  # fmt: skip


# --- point 3: a populated submodule would run git with its own config -----------------------


# The gitlinks of an index, by the index file's identity: listing the index is a git process
# (~13 ms on a small repository, more on a large one) before every command, and an
# orchestrator runs many commands on an index that has not changed. Git rewrites an index by
# renaming a new file over it (a new inode); an in-place write changes its ctime, which no
# process can set back (mtime it can). Only the listing is cached: whether a gitlink's folder
# holds a `.git` is looked at every time (the work tree changes without the index changing).
_GITLINKS: OrderedDict[tuple[str, int, int, int, int, int], tuple[str, ...]] = OrderedDict()
_GITLINKS_KEPT = 256


def _index_key(repo: Repo) -> tuple[str, int, int, int, int, int] | None:
    try:
        st = os.stat(repo.git_dir / "index", follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (str(repo.git_dir), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


async def _gitlinks(repo: Repo) -> tuple[str, ...]:
    """The paths of the index's gitlinks (mode 160000), from the cache when the index is the
    same file as when it was listed."""
    key = _index_key(repo)
    if key is not None and key in _GITLINKS:
        _GITLINKS.move_to_end(key)
        return _GITLINKS[key]
    done = await _git(repo, ("ls-files", "-z", "--stage"), timeout=120, output_limit=2**26)
    if not done.ok or done.truncated:
        why = "too many entries" if done.ok else done.output.strip()[:300]
        raise UnsafeRepo(f"{repo.work_tree}: git cannot list its index: {why}")
    links = []
    for entry in done.output.split("\0"):
        meta, _, path = entry.partition("\t")
        if meta.startswith("160000 "):
            links.append(path)
    if key is not None and key == _index_key(repo):  # not rewritten while git read it
        _GITLINKS[key] = tuple(links)
        while len(_GITLINKS) > _GITLINKS_KEPT:
            _GITLINKS.popitem(last=False)
    return tuple(links)


async def _check_submodules(repo: Repo) -> None:
    for path in await _gitlinks(repo):
        if "\ufffd" in path or os.path.lexists(repo.work_tree / path / ".git"):
            raise UnsafeRepo(
                f"{repo.work_tree}: submodule {path!r} holds a repository git would run "
                "with its own config"
            )


# --- point 4: every command -----------------------------------------------------------------


def _global_options(config: Iterable[tuple[str, str]] = ()) -> list[str]:
    options = ["--no-pager", "--no-replace-objects", "--literal-pathspecs"]
    for key, value in (*OVERRIDES, *config):
        options += ["-c", f"{key}={value}"]
    return options


def _clean_path() -> str:
    """The host's PATH without relative entries (they would resolve in the work tree)."""
    parts = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(p for p in parts if os.path.isabs(p)) or "/usr/bin:/bin"


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A git child's whole environment: nothing of BashGym's but PATH (and TZ)."""
    env = {
        "PATH": _clean_path(),
        "HOME": os.path.join(os.devnull, "home"),  # never a folder: no ~/.gitconfig etc.
        "XDG_CONFIG_HOME": os.path.join(os.devnull, "config"),
        "LC_ALL": "C",
        "LANG": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_SYSTEM": os.devnull,
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_EDITOR": ":",
        "GIT_SEQUENCE_EDITOR": ":",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_PROTOCOL_FROM_USER": "0",
    }
    if "TZ" in os.environ:
        env["TZ"] = os.environ["TZ"]
    return {**env, **(extra or {})}


def _git_path(env: Mapping[str, str]) -> str:
    found = shutil.which("git", path=env["PATH"])
    if found is None:
        raise UnsafeRepo("git is not installed (not on PATH)")
    return found


async def _git(
    repo: Repo,
    args: Sequence[str],
    *,
    config: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None,
    output_limit: int = 64_000,
    stdin: bytes | None = None,
) -> Completed:
    policy = _env({"GIT_DIR": str(repo.git_dir), "GIT_WORK_TREE": str(repo.work_tree)})
    child_env = {**(env or {}), **policy}  # the caller adds variables, never undoes the policy
    argv = [_git_path(child_env), *_global_options((config or {}).items()), *args]
    return await procs.run(argv, cwd=repo.work_tree, env=child_env, timeout=timeout,
                           output_limit=output_limit, stdin=stdin)  # fmt: skip
