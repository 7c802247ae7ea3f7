"""Read PDFs, Markdown, text and source files into token-budgeted chunks, one row per chunk.

A file that cannot be read (an encrypted or corrupt PDF, a PDF with no text layer, text that is
not UTF-8, a binary behind a text extension) is counted under `source.unreadable` and named in
the run's notes, and the run goes on: one bad file in a folder of thousands must not stop it.
Files over `max_file_bytes` are counted and noted the same way, under `source.too_large`.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path
from typing import Any

import pandas as pd
from bashgym_inputs import glob_files, is_glob, require_input
from pydantic import Field, field_validator, model_validator

from bashgym.contracts import InputError, Options, RunContext, Source
from bashgym_sources_documents.chunking import chunk_text

MARKDOWN = {".md", ".markdown", ".mdx", ".rst", ".adoc"}
TEXT = {".txt", ".text", ".log", ".csv", ".tsv"}
CODE = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".jsx": "javascript",
    ".mjs": "javascript", ".cjs": "javascript", ".ts": "typescript", ".tsx": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".scala": "scala",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".php": "php", ".swift": "swift", ".m": "objective-c",
    ".sh": "shell", ".bash": "shell", ".zsh": "shell", ".ps1": "powershell", ".sql": "sql",
    ".r": "r", ".lua": "lua", ".pl": "perl", ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell", ".ml": "ocaml", ".clj": "clojure", ".dart": "dart", ".vue": "vue",
    ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json", ".ini": "ini",
    ".cfg": "ini", ".xml": "xml", ".html": "html", ".css": "css", ".scss": "css",
    ".tf": "terraform", ".proto": "protobuf", ".graphql": "graphql", ".dockerfile": "docker",
}  # fmt: skip
NAMED = {"Dockerfile": "docker", "Makefile": "make", "Justfile": "make"}
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox"}
SKIP_DIRS |= {".mypy_cache", ".pytest_cache", ".ruff_cache", "dist", "build", "target"}
COLUMNS = [
    "text", "path", "chunk_index", "num_chunks", "start_line", "end_line", "start_char",
    "end_char", "page", "end_page", "num_tokens", "doc_type", "language",
]  # fmt: skip


class DocumentsOptions(Options):
    path: str = Field(description="A file, a folder (read recursively) or a glob.")
    chunk_tokens: int = Field(
        default=512, ge=16, description="Most tokens in a chunk (approximate tokens, no download)."
    )
    overlap_tokens: int = Field(
        default=64, ge=0, description="Tokens each chunk repeats from the end of the one before."
    )
    max_file_bytes: int = Field(
        default=20_000_000, ge=1, description="Larger files are skipped (counted and noted)."
    )
    extensions: list[str] | None = Field(
        default=None,
        description="Only these extensions (e.g. ['.md', '.py']); default: PDF, Markdown, text "
        "and common source/config files.",
    )
    hidden: bool = Field(default=False, description="Also read dot-files and dot-folders.")

    @field_validator("path")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a file, folder or glob")
        require_input(value)
        return value

    @model_validator(mode="after")
    def _overlap_below_budget(self) -> DocumentsOptions:
        if self.overlap_tokens >= self.chunk_tokens:
            raise ValueError("overlap_tokens must be smaller than chunk_tokens")
        return self


def kind_of(path: Path) -> tuple[str, str | None] | None:
    """(doc_type, language) for a readable file, None for anything else."""
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return "pdf", None
    if suffix in MARKDOWN:
        return "markdown", None
    if suffix in TEXT:
        return "text", None
    if suffix in CODE:
        return "code", CODE[suffix]
    if path.name in NAMED:
        return "code", NAMED[path.name]
    return None


class Unreadable(Exception):
    """A file that cannot be turned into text; the message says why."""


class DocumentsSource(Source[DocumentsOptions]):
    """PDF, Markdown, text and source files, chunked by a token budget with overlap."""

    def open(self, options: DocumentsOptions, run: RunContext) -> pd.DataFrame:
        root, paths = self._paths(options)
        rows: list[dict[str, Any]] = []
        for path in paths:
            rel = _relative(path, root)
            if path.stat().st_size > options.max_file_bytes:
                run.count("source.too_large")
                run.note(f"documents: skipped {rel} (over {options.max_file_bytes} bytes)")
                continue
            doc_type, language = kind_of(path) or ("text", None)
            try:
                text, page_starts = _read(path, doc_type)
            except Unreadable as exc:
                run.count("source.unreadable")
                run.note(f"documents: cannot read {rel}: {exc}")
                continue
            rows.extend(self._rows(text, page_starts, rel, doc_type, language, options))
            run.count("source.files")
        return pd.DataFrame(rows, columns=COLUMNS)

    def _rows(
        self,
        text: str,
        page_starts: list[int] | None,
        rel: str,
        doc_type: str,
        language: str | None,
        options: DocumentsOptions,
    ) -> list[dict[str, Any]]:
        chunks = list(chunk_text(text, options.chunk_tokens, options.overlap_tokens, doc_type))
        rows = []
        for index, chunk in enumerate(chunks):
            page = end_page = None
            if page_starts is not None:
                page = bisect.bisect_right(page_starts, chunk.start_char)
                end_page = bisect.bisect_right(page_starts, chunk.end_char - 1)
            rows.append(
                {
                    "text": chunk.text,
                    "path": rel,
                    "chunk_index": index,
                    "num_chunks": len(chunks),
                    "start_line": chunk.start_line,
                    "end_line": chunk.end_line,
                    "start_char": chunk.start_char,
                    "end_char": chunk.end_char,
                    "page": page,
                    "end_page": end_page,
                    "num_tokens": chunk.num_tokens,
                    "doc_type": doc_type,
                    "language": language,
                }
            )
        return rows

    def _paths(self, options: DocumentsOptions) -> tuple[Path, list[Path]]:
        """The root that row paths are relative to, and the files to read, sorted."""
        path = Path(options.path).expanduser()  # `~/notes` as every file source reads it
        wanted = {f".{e.lower().lstrip('.')}" for e in options.extensions or []}

        def keep(p: Path, root: Path) -> bool:
            parts = p.relative_to(root).parts if p.is_relative_to(root) else p.parts
            if any(part in SKIP_DIRS for part in parts[:-1]):
                return False
            if not options.hidden and any(part.startswith(".") for part in parts):
                return False
            if wanted:
                return p.suffix.lower() in wanted
            return kind_of(p) is not None

        if path.is_dir():
            root = path
            found = [p for p in path.rglob("*") if p.is_file() and keep(p, root)]
        elif is_glob(options.path):
            root = _glob_root(os.path.expanduser(options.path))
            found = [p for p in glob_files(options.path) if keep(p, root)]
        elif path.is_file():
            root, found = path.parent, [path]
        else:
            found, root = [], path
        if not found:
            raise InputError(
                f"documents source: no readable documents match {options.path!r} "
                "(PDF, Markdown, text or source files)"
            )
        return root, sorted(found)


def _glob_root(pattern: str) -> Path:
    parts = []
    for part in Path(pattern).parts:
        if is_glob(part):
            break
        parts.append(part)
    return Path(*parts) if parts else Path(".")


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def _read(path: Path, doc_type: str) -> tuple[str, list[int] | None]:
    """The document's text and, for PDFs, the char offset where each page starts."""
    if doc_type == "pdf":
        return _read_pdf(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Unreadable(f"{type(exc).__name__}: {exc.strerror}") from None
    if b"\x00" in data[:8192]:
        raise Unreadable("binary content (NUL bytes)")
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


PAGE_SEPARATOR = "\n\n"


def _read_pdf(path: Path) -> tuple[str, list[int]]:
    # ~0.27 s (measured): pypdf only when a PDF is read; this plugin loads with every command
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted PDF (needs a password)")
        pages = [page.extract_text() or "" for page in reader.pages]
    except Unreadable:
        raise
    except (PyPdfError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise Unreadable(f"corrupt or unsupported PDF ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # noqa: BLE001 -- pypdf raises assorted errors on broken files
        raise Unreadable(f"PDF could not be parsed ({type(exc).__name__}: {exc})") from None
    if not any(p.strip() for p in pages):
        raise Unreadable("PDF has no text layer (scanned pages?)")
    starts, offset = [], 0
    for page in pages:
        starts.append(offset)
        offset += len(page) + len(PAGE_SEPARATOR)
    return PAGE_SEPARATOR.join(pages), starts
