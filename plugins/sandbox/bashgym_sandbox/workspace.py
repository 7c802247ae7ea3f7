"""File operations for agent tools, confined to one workspace folder.

Every path an agent names is resolved (symlinks included) and refused unless it stays inside
the workspace: `../x`, an absolute path elsewhere, and a symlink pointing out all fail with a
PathError whose message goes back to the model. It implements the kernel's `Files` contract for
every environment whose workspace is a host folder (the workspace is the same folder inside a
sandbox: bubblewrap uses it too), so the confinement rules exist once.

Limits: a file over `max_read` bytes is read in part; listings and searches stop at a count.
The check-then-open gap is not closed against a process racing to swap a symlink in; commands
that could do that run inside the environment's sandbox, which is the real isolation.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

from bashgym.contracts import PathError

SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", ".mypy_cache", ".pytest_cache"}


class Workspace:
    """File operations confined to `root` (the kernel's `Files` contract)."""

    def __init__(self, root: Path | str, *, max_read: int = 256_000, max_entries: int = 500):
        self.root = Path(os.path.realpath(root))
        self.max_read, self.max_entries = max_read, max_entries

    def resolve(self, path: str | Path) -> Path:
        """The real path of `path` (relative to the workspace), or PathError if it leaves it."""
        text = str(path).strip() or "."
        real = Path(os.path.realpath(self.root / text))  # an absolute `text` replaces root
        if real != self.root and self.root not in real.parents:
            raise PathError(f"{text}: outside the workspace ({self.root})")
        return real

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root)) if path != self.root else "."

    def read(self, path: str, offset: int = 0, limit: int | None = None) -> str:
        """Text of a file, from line `offset` (0-based), at most `limit` lines."""
        target = self.resolve(path)
        if not target.is_file():
            raise PathError(f"{path}: no such file")
        with target.open("rb") as fh:
            data = fh.read(self.max_read + 1)
        if b"\0" in data[:8192]:
            raise PathError(f"{path}: a binary file")
        text = data[: self.max_read].decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        end = None if limit is None else offset + limit
        body = "".join(lines[offset:end])
        if len(data) > self.max_read:
            body += f"\n[... file cut at {self.max_read} bytes ...]\n"
        return body

    def write(self, path: str, content: str) -> str:
        target = self.resolve(path)
        if target.is_dir():
            raise PathError(f"{path}: is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode())} bytes to {self.relative(target)}"

    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str:
        """Replace `old` by `new`: exactly one occurrence, or all with `replace_all`."""
        target = self.resolve(path)
        if not target.is_file():
            raise PathError(f"{path}: no such file")
        text = target.read_text(encoding="utf-8", errors="replace")
        found = text.count(old) if old else 0
        if found == 0:
            raise PathError(f"{path}: the text to replace was not found")
        if found > 1 and not replace_all:
            raise PathError(f"{path}: the text to replace occurs {found} times; give more context")
        target.write_text(text.replace(old, new), encoding="utf-8")
        return f"replaced {found if replace_all else 1} occurrence(s) in {self.relative(target)}"

    def listing(self, path: str = ".", depth: int = 2) -> str:
        """Files and folders (folders end in /) under `path`, `depth` levels deep."""
        base = self.resolve(path)
        if not base.is_dir():
            raise PathError(f"{path}: no such folder")
        out: list[str] = []
        for current, dirs, files in os.walk(base):
            level = len(Path(current).relative_to(base).parts)
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            out += [self.relative(Path(current) / d) + "/" for d in dirs]
            out += [self.relative(Path(current) / f) for f in sorted(files)]
            if level + 1 >= depth:
                dirs[:] = []
            if len(out) >= self.max_entries:
                return "\n".join(sorted(out)[: self.max_entries]) + "\n[... more entries ...]"
        return "\n".join(sorted(out)) or "(empty)"

    def search(self, pattern: str, path: str = ".", glob: str | None = None) -> str:
        """`file:line: text` for every line matching the regex `pattern`."""
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise PathError(f"invalid regex {pattern!r}: {exc}") from None
        base = self.resolve(path)
        files = [base] if base.is_file() else []
        for current, dirs, names in os.walk(base) if base.is_dir() else []:
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            files += [Path(current) / n for n in sorted(names)]
        hits: list[str] = []
        for file in files:
            if glob and not fnmatch.fnmatch(file.name, glob):
                continue
            try:
                data = self.resolve(file).read_bytes()[: self.max_read]
            except (OSError, PathError):  # a symlink out of the workspace is not followed
                continue
            if b"\0" in data[:8192]:
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    hits.append(f"{self.relative(file)}:{number}: {line.strip()[:300]}")
                    if len(hits) >= self.max_entries:
                        return "\n".join(hits) + "\n[... more matches ...]"
        return "\n".join(hits) or "no matches"
