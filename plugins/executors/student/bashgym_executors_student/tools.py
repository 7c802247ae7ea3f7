"""The student's tools: OpenAI function schemas, and their execution in the task's environment.

Each tool's arguments are a pydantic model, so one definition gives both the JSON schema the
model sees and the validation of what it sends. Every failure — malformed JSON, a missing
argument, an unknown tool, a path outside the workspace, a command that times out — comes back
as a tool result marked as an error, for the model to read and recover from.
"""

from __future__ import annotations

import json
from typing import Any

from json_repair import repair_json
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bashgym.contracts import EnvironmentSession, Files, PathError
from bashgym.records import ToolSchema


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadFile(_Args):
    """Read a text file of the project."""

    path: str = Field(description="File path, relative to the project folder.")
    offset: int = Field(default=0, ge=0, description="First line to read (0-based).")
    limit: int | None = Field(default=None, ge=1, description="Most lines to read.")


class WriteFile(_Args):
    """Create or overwrite a file with the given content."""

    path: str = Field(description="File path, relative to the project folder.")
    content: str = Field(description="The whole new content of the file.")


class EditFile(_Args):
    """Replace exact text in a file (the text must occur once, unless replace_all)."""

    path: str = Field(description="File path, relative to the project folder.")
    old_text: str = Field(description="The exact text to find.")
    new_text: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(default=False, description="Replace every occurrence.")


class ListDirectory(_Args):
    """List files and folders (folders end in /)."""

    path: str = Field(default=".", description="Folder, relative to the project folder.")
    depth: int = Field(default=2, ge=1, le=10, description="How many levels deep.")


class SearchCode(_Args):
    """Search file contents for a regular expression; answers file:line: text."""

    pattern: str = Field(description="Python regular expression.")
    path: str = Field(default=".", description="Folder or file to search in.")
    glob: str | None = Field(default=None, description="Only file names matching, e.g. *.py")


class RunCommand(_Args):
    """Run a shell command in the project folder; answers its exit code and output."""

    command: str = Field(description="The shell command (bash).")
    timeout_s: float | None = Field(default=None, gt=0, description="Stop it after this long.")


TOOLS: dict[str, type[_Args]] = {
    "read_file": ReadFile,
    "write_file": WriteFile,
    "edit_file": EditFile,
    "list_directory": ListDirectory,
    "search_code": SearchCode,
    "run_command": RunCommand,
}


def schemas() -> list[ToolSchema]:
    """The tools as the model sees them (and as the Trace records them)."""
    out = []
    for name, model in TOOLS.items():
        params = model.model_json_schema()
        params.pop("title", None)
        params.pop("description", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        out.append(ToolSchema(name=name, description=model.__doc__ or "", parameters=params))
    return out


def calls_in_text(text: str) -> list[tuple[str, str]]:
    """The tool calls a reply wrote as JSON text instead of as calls, as (name, arguments
    JSON): an object `{"name": <one of the tools>, "arguments": {...}}` (or `"parameters"`),
    or a list of them, bare, in a code fence or in Qwen's `<tool_call>` tags. The embedded 0.5B
    model writes its calls this way (often a closing brace short), and its tasks then ended as
    if it had answered.
    json_repair (already installed with DataDesigner) reads the object out of the surrounding
    text and mends what a small model leaves off; anything that is not exactly such an object,
    prose included, is no call."""
    if '"name"' not in text:
        return []
    found = repair_json(text, return_objects=True)
    calls = []
    for item in found if isinstance(found, list) else [found]:
        keys = set(item) if isinstance(item, dict) else set()
        if keys not in ({"name", "arguments"}, {"name", "parameters"}):
            return []
        name, arguments = item["name"], item.get("arguments", item.get("parameters"))
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                return []
        if name not in TOOLS or not isinstance(arguments, dict):
            return []
        calls.append((name, json.dumps(arguments, ensure_ascii=False)))
    return calls


def clip(text: str, limit: int) -> str:
    """Head and tail of `text` within `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


async def call(
    name: str, arguments: str, env: EnvironmentSession, *, command_timeout: float
) -> tuple[str, bool]:
    """Run one tool call: (result text, is_error)."""
    model = TOOLS.get(name)
    if model is None:
        return f"error: unknown tool {name!r}; the tools are {', '.join(TOOLS)}", True
    try:
        raw: Any = json.loads(arguments or "{}")
        args = model.model_validate(raw)
    except ValueError as exc:  # bad JSON, or arguments that do not fit the schema
        detail = _validation(exc) if isinstance(exc, ValidationError) else f"not JSON: {exc}"
        return f"error: invalid arguments for {name}: {detail}", True
    try:
        if isinstance(args, RunCommand):
            limit = min(args.timeout_s or command_timeout, command_timeout)
            done = await env.run(args.command, timeout=limit)
            head = f"exit code: {done.exit_code}" if done.exit_code is not None else done.reason
            return f"{head}\n{done.output}", not done.ok
        return _file_op(args, env.workspace), False
    except (PathError, OSError) as exc:
        return f"error: {exc}", True


def _file_op(args: _Args, ws: Files) -> str:
    match args:
        case ReadFile():
            return ws.read(args.path, args.offset, args.limit) or "(empty file)"
        case WriteFile():
            return ws.write(args.path, args.content)
        case EditFile():
            return ws.edit(args.path, args.old_text, args.new_text, replace_all=args.replace_all)
        case ListDirectory():
            return ws.listing(args.path, args.depth)
        case SearchCode():
            return ws.search(args.pattern, args.path, args.glob)
    raise PathError(f"{type(args).__name__} is not a file operation")


def _validation(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
    )
