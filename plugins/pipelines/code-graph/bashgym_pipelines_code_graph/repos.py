"""Where a repository's files come from: a local folder or checkout, or a clone at a ref.

A local git checkout is read as it is on disk, limited to the files git tracks (so build
output, virtualenvs and other ignored files stay out); a plain folder is walked. With a `ref`,
or for a URL, the repository is cloned into the run directory and checked out there: the
user's own working tree is never touched. GitPython drives git.
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


def is_url(spec: str) -> bool:
    return bool(_URL.match(spec))


@dataclass(frozen=True)
class RepoSpec:
    """One repository as the user named it, and the ref to read it at (None: as on disk)."""

    spec: str
    ref: str | None = None

    @property
    def key(self) -> str:
        """Its work-item key in the run store: stable across attempts of a run."""
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


def checkout(spec: RepoSpec, workdir: Path) -> Checkout:
    """Make `spec` readable; InputError naming the repository when it cannot be."""
    import git  # ~0.12 s (measured): GitPython only when a repository is read

    local = spec.local_path()
    if local is not None and spec.ref is None:
        if not local.is_dir():
            raise InputError(f"repository {spec.spec!r} is not a folder")
        try:
            repo = git.Repo(local, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            return Checkout(local, walk_sources(local), None)
        if repo.bare:
            raise InputError(f"repository {spec.spec!r} is bare: name a ref to clone it at")
        commit = repo.head.commit.hexsha if repo.head.is_valid() else None
        return Checkout(local, _tracked(repo, local), commit)
    digest = hashlib.sha256(spec.key.encode()).hexdigest()[:12]
    target = workdir / f"{spec.name}-{digest}"
    source = str(local) if local is not None else spec.spec
    try:
        if (target / ".git").is_dir():  # an earlier attempt cloned it
            repo = git.Repo(target)
        else:
            repo = git.Repo.clone_from(source, target)
        if spec.ref:
            repo.git.checkout(spec.ref, "--detach")
    except git.GitCommandError as exc:
        detail = (exc.stderr or str(exc)).strip().splitlines()
        raise InputError(
            f"repository {spec.spec!r}{f' at {spec.ref!r}' if spec.ref else ''}: "
            f"{detail[-1] if detail else 'git failed'}"
        ) from None
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
