"""Where a repository's files come from: a local folder or checkout, or a clone at a ref.

A local git checkout is read as it is on disk, limited to the files git tracks (so build
output, virtualenvs and other ignored files stay out); a plain folder is walked. With a `ref`,
or for a URL, the repository is cloned into a folder the caller gives (the code-repo source
gives a scratch folder and removes it once the graph is written: a clone holds the whole
unscrubbed repository and, for a URL with a token, that token in `.git/config`) and checked
out there: the user's own working tree is never touched. GitPython drives git.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from bashgym.contracts import InputError
from bashgym_pipelines_code_graph.build import language_of, walk_sources

_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)
# a URL's user info (`user:password@`, `token@`): up to the last `@` before the path
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/?#]*@", re.IGNORECASE)


def is_url(spec: str) -> bool:
    return bool(_URL.match(spec))


def without_credentials(spec: str) -> str:
    """`spec` with a URL's user info masked. In a git URL that part is a credential (a token,
    or user:password) whatever shape it has, so it is masked even where the secret scrubber
    knows no rule for the token; the scrubber then runs over the rest."""
    return _USERINFO.sub(r"\1[REDACTED:url-credentials]@", spec)


@dataclass(frozen=True)
class RepoSpec:
    """One repository as the user named it, and the ref to read it at (None: as on disk)."""

    spec: str
    ref: str | None = None

    @property
    def key(self) -> str:
        """What tells two repositories apart, stable across attempts of a run. It may hold a
        secret (a token in a URL): it stays in memory; the run store keys by `source.item_key`."""
        return f"{self.spec}@{self.ref}" if self.ref else self.spec

    @property
    def name(self) -> str:
        tail = self.spec.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        tail = tail[:-4] if tail.endswith(".git") else tail
        return tail or "repo"

    def local_path(self) -> Path | None:
        if self.spec.startswith("file://"):
            return Path(self.spec[len("file://") :])
        return None if is_url(self.spec) else Path(self.spec).expanduser()


@dataclass
class Checkout:
    """A repository ready to read: its root, the files to parse, and the commit if known."""

    root: Path
    files: list[str]
    commit: str | None


def _tracked(repo: object, root: Path) -> list[str]:
    listed = repo.git.ls_files("-z").split("\0")  # type: ignore[attr-defined]
    return sorted(p for p in listed if p and language_of(p) is not None and (root / p).is_file())


def _git_reason(exc: Exception) -> str:
    """git's own last word (its `fatal:` line) out of GitPython's error, whose stderr ends
    with a lone quote; git writes a URL there without its credentials."""
    text = str(getattr(exc, "stderr", "") or exc).replace("stderr: '", "")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip(" '")]
    said = [ln for ln in lines if ln.startswith(("fatal:", "error:"))] or lines
    return said[-1].rstrip("'").strip() if said else "git failed"


def checkout(spec: RepoSpec, workdir: Path, label: str | None = None) -> Checkout:
    """Make `spec` readable, cloning it under `workdir` when it needs a clone; InputError
    naming the repository when it cannot be. `label`: how messages name it (the caller's
    redacted spec: a message goes to the run store and run.json), the spec itself by default."""
    import git  # ~0.12 s (measured): GitPython only when a repository is read

    named = repr(label if label is not None else spec.spec)
    local = spec.local_path()
    if local is not None and spec.ref is None:
        if not local.is_dir():
            raise InputError(f"repository {named} is not a folder")
        try:
            repo = git.Repo(local, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return Checkout(local, walk_sources(local), None)
        if repo.bare:
            raise InputError(f"repository {named} is bare: name a ref to clone it at")
        commit = repo.head.commit.hexsha if repo.head.is_valid() else None
        return Checkout(local, _tracked(repo, local), commit)
    # the folder's name is a digest: a name taken from the spec could carry its token
    target = workdir / hashlib.sha256(spec.key.encode()).hexdigest()[:12]
    source = str(local) if local is not None else spec.spec
    try:
        repo = git.Repo.clone_from(source, target)
        if spec.ref:
            repo.git.checkout(spec.ref, "--detach")
    except git.GitCommandError as exc:
        at = f" at {spec.ref!r}" if spec.ref else ""
        raise InputError(f"repository {named}{at}: {_git_reason(exc)}") from None
    return Checkout(target, _tracked(repo, target), repo.head.commit.hexsha)


def fingerprint_files(spec: RepoSpec) -> list[Path]:
    """Files whose change must stop a run from resuming silently: a local repository's HEAD
    and the sources it would parse (path, size and mtime go into the run's input hash)."""
    local = spec.local_path()
    if local is None or not local.is_dir():
        return []
    head = local / ".git" / "HEAD"
    found = [head] if head.is_file() else []
    if spec.ref is None:
        found += [local / p for p in walk_sources(local)]
    return found


def env_ready() -> None:
    """Never let git stop to ask for credentials: a run has no one to answer."""
    os.environ.setdefault("GIT_TERMINAL_PROMPT", "0")
