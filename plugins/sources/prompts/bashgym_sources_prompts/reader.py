"""Turn the ways people keep prompt lists into rows with a `prompt` column.

Why a source of its own: prompts for executors and pipelines rarely live in a table. They sit in
a text file (one per line), a JSONL export of chats, a markdown file of tasks, or a folder of
numbered markdown task files (`01-setup.md`, `02-api.md`, ... `10-deploy.md`) whose order
matters. Each reader keeps where a prompt came from (`source_file` plus `source_line` or
`source_index`) so a generated row can be traced back to the line someone wrote. A record that
has no prompt is counted and noted, never silently dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError, RunContext

TEXT_SUFFIXES = {".txt"}
JSONL_SUFFIXES = {".jsonl"}
JSON_SUFFIXES = {".json"}
MD_SUFFIXES = {".md", ".markdown"}
SUPPORTED = sorted(TEXT_SUFFIXES | JSONL_SUFFIXES | JSON_SUFFIXES | MD_SUFFIXES)
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")

Row = dict[str, Any]


class PromptsInputError(InputError):
    """The prompt file or folder is missing, empty, unsupported or has no prompts in it."""


def natural_key(path: Path | str) -> list[Any]:
    """Sort key that puts `10-x.md` after `9-x.md`: digit runs compare as numbers. A Path sorts
    by its name; a string (a full path) as a whole."""
    text = path.name if isinstance(path, Path) else path
    return [
        (1, int(part)) if part.isdigit() else (0, part) for part in re.split(r"(\d+)", text.lower())
    ]


# ------------------------------------------------------------------------------------- text


def read_txt(path: Path, run: RunContext, field: str, split: int | None) -> list[Row]:
    rows = []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        text = line.strip()
        if text and not text.startswith("#"):
            rows.append({"prompt": text, "source_file": str(path), "source_line": number})
    return rows


# ------------------------------------------------------------------------------------- json


def read_jsonl(path: Path, run: RunContext, field: str, split: int | None) -> list[Row]:
    rows = []
    for number, line in enumerate(_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            run.count("source.bad_lines")
            run.note(f"{path}:{number}: invalid JSON ({exc})")
            continue
        row = _record_row(record, field, f"{path}:{number}", run)
        if row is not None:
            rows.append({**row, "source_file": str(path), "source_line": number})
    return rows


def read_json(path: Path, run: RunContext, field: str, split: int | None) -> list[Row]:
    try:
        data = json.loads(_text(path))
    except ValueError as exc:
        raise PromptsInputError(f"prompts source: {path} is not valid JSON: {exc}") from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise PromptsInputError(
            f"prompts source: {path} must hold a list of strings or objects, "
            f"got {type(data).__name__}"
        )
    rows = []
    for index, record in enumerate(data):
        row = _record_row(record, field, f"{path}[{index}]", run)
        if row is not None:
            rows.append({**row, "source_file": str(path), "source_index": index})
    return rows


def _record_row(record: Any, field: str, where: str, run: RunContext) -> Row | None:
    """One JSON record as a row: the prompt, a `messages` column when it came from a chat, and
    the record's other fields (nested values as JSON text, so any sink can store them)."""
    if isinstance(record, str):
        prompt: Any = record
        rest: dict[str, Any] = {}
    elif isinstance(record, dict):
        rest = {k: v for k, v in record.items() if k != field}
        if field in record:
            prompt = record[field]
        elif isinstance(record.get("messages"), list):
            prompt = _last_user_message(record["messages"])
            rest["messages"] = json.dumps(record["messages"], ensure_ascii=False)
        else:
            return _skip(run, where, f"no {field!r} field and no 'messages' list")
    else:
        return _skip(run, where, f"expected a string or an object, got {type(record).__name__}")
    if isinstance(prompt, (int, float)) and not isinstance(prompt, bool):
        prompt = str(prompt)
    if not isinstance(prompt, str):
        return _skip(run, where, "empty prompt" if prompt is None else "prompt is not text")
    if not prompt.strip():
        return _skip(run, where, "empty prompt")
    extra = {
        k: v if v is None or isinstance(v, (str, int, float, bool)) else json.dumps(v)
        for k, v in rest.items()
    }
    return {"prompt": prompt.strip(), **extra}


def _last_user_message(messages: list[Any]) -> str | None:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
                content = "\n".join(
                    p["text"]
                    for p in content
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                )
            return content if isinstance(content, str) else None
    return None


def _skip(run: RunContext, where: str, reason: str) -> None:
    run.count("source.skipped_records")
    run.note(f"{where}: {reason}")
    return None


# ------------------------------------------------------------------------------------- markdown


def read_md(path: Path, run: RunContext, field: str, split: int | None) -> list[Row]:
    text = _text(path)
    sections = split_sections(text, split) if split else None
    if sections is None:
        if split:
            run.note(f"{path}: no level-{split} heading; the whole file is one prompt")
        body = text.strip()
        title = first_heading(text)
        return [{"prompt": body, "title": title, "source_file": str(path), "source_index": 0}]
    preamble, parts = sections
    if preamble.strip():
        run.count("source.skipped_preambles")
        run.note(f"{path}: text before the first level-{split} heading is not a prompt")
    return [
        {"prompt": body, "title": title, "source_file": str(path), "source_index": index}
        for index, (title, body) in enumerate(parts)
    ]


def first_heading(text: str) -> str | None:
    for _, level, title in _lines(text):
        if level:
            return title
    return None


def split_sections(text: str, level: int) -> tuple[str, list[tuple[str, str]]] | None:
    """(preamble, [(title, section text incl. its heading)]) at headings of exactly `level`,
    ignoring `#` lines inside fenced code; None when there is no such heading."""
    preamble: list[str] = []
    parts: list[tuple[str, list[str]]] = []
    for line, found, title in _lines(text):
        if found == level:
            parts.append((title, [line]))
        elif parts:
            parts[-1][1].append(line)
        else:
            preamble.append(line)
    if not parts:
        return None
    return "\n".join(preamble), [(t, "\n".join(body).strip()) for t, body in parts]


def _lines(text: str) -> list[tuple[str, int, str]]:
    """Each line with its heading level (0 when not a heading, or inside a code fence)."""
    out, fence = [], None
    for line in text.splitlines():
        marker = _FENCE.match(line)
        if marker:
            fence = None if fence == marker.group(1) else fence or marker.group(1)
            out.append((line, 0, ""))
            continue
        heading = None if fence else _HEADING.match(line)
        out.append((line, len(heading.group(1)), heading.group(2)) if heading else (line, 0, ""))
    return out


# ------------------------------------------------------------------------------------- files


READERS: dict[str, Callable[[Path, RunContext, str, int | None], list[Row]]] = {
    **dict.fromkeys(TEXT_SUFFIXES, read_txt),
    **dict.fromkeys(JSONL_SUFFIXES, read_jsonl),
    **dict.fromkeys(JSON_SUFFIXES, read_json),
    **dict.fromkeys(MD_SUFFIXES, read_md),
}


def read_file(path: Path, run: RunContext, field: str, split: int | None) -> list[Row]:
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise PromptsInputError(
            f"prompts source: cannot read {path}: supported are {', '.join(SUPPORTED)}"
        )
    return reader(path, run, field, split)


def folder_files(folder: Path, run: RunContext) -> list[Path]:
    """A folder's prompt files in natural order: its markdown files (only the numbered ones when
    some are numbered, so a README does not become a task), else its other prompt files."""
    files = [p for p in folder.iterdir() if p.is_file()]
    md = sorted((p for p in files if p.suffix.lower() in MD_SUFFIXES), key=natural_key)
    numbered = [p for p in md if p.name[:1].isdigit()]
    if numbered:
        for other in (p for p in md if p not in numbered):
            run.count("source.skipped_files")
            run.note(f"{other}: not numbered, skipped among numbered task files")
        return numbered
    if md:
        return md
    return sorted((p for p in files if p.suffix.lower() in READERS), key=natural_key)


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptsInputError(f"prompts source: cannot read {path}: {exc}") from exc
