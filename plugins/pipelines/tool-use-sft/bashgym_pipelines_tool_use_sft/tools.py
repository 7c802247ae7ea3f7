"""The tool set: a default coding-agent one, loading a user's from JSON, and checking calls.

Why check calls against the schemas here rather than trust the generator: a model writing
a synthetic conversation invents tools (`grep_files`), renames parameters (`file` for `path`)
and drops required ones. A training row with such a call teaches the student to call tools it
was never offered, which is worse than no row. Every call is therefore checked with a real
JSON Schema validator against the tool's `parameters`; the default tools forbid extra
properties so a renamed argument is caught, not ignored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError
from bashgym.text import plain

Tool = dict[str, Any]


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> Tool:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


_PATH = {"type": "string", "description": "File path relative to the repository root."}

DEFAULT_TOOLS: list[Tool] = [
    _tool(
        "read_file",
        "Read a text file from the repository, optionally only a range of lines.",
        {
            "path": _PATH,
            "start_line": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "end_line": {"type": "integer", "minimum": 1, "description": "Last line, inclusive."},
        },
        ["path"],
    ),
    _tool(
        "write_file",
        "Create a file or replace its whole content.",
        {"path": _PATH, "content": {"type": "string", "description": "The full new content."}},
        ["path", "content"],
    ),
    _tool(
        "edit_file",
        "Replace one exact occurrence of a text in a file with new text.",
        {
            "path": _PATH,
            "old_text": {"type": "string", "description": "Text to replace; must occur once."},
            "new_text": {"type": "string", "description": "Replacement text."},
        },
        ["path", "old_text", "new_text"],
    ),
    _tool(
        "list_dir",
        "List the files and folders under a directory of the repository.",
        {
            "path": {"type": "string", "description": "Directory path; '.' is the root."},
            "recursive": {"type": "boolean", "description": "Also list sub-folders."},
        },
        ["path"],
    ),
    _tool(
        "search_code",
        "Search the repository's files for a regular expression (like ripgrep).",
        {
            "pattern": {"type": "string", "description": "Regular expression to search for."},
            "path": {"type": "string", "description": "Folder or file to search; default '.'."},
            "glob": {"type": "string", "description": "Only files matching this glob, e.g. *.py."},
            "case_sensitive": {"type": "boolean", "description": "Default true."},
        },
        ["pattern"],
    ),
    _tool(
        "run_command",
        "Run a shell command in the repository root and return its exit code and output.",
        {
            "command": {"type": "string", "description": "The bash command line."},
            "timeout_s": {
                "type": "integer",
                "minimum": 1,
                "maximum": 600,
                "description": "Kill the command after this many seconds (default 120).",
            },
        },
        ["command"],
    ),
    _tool(
        "http_get",
        "Fetch a URL (documentation, an API endpoint) and return the response body as text.",
        {
            "url": {"type": "string", "description": "An http(s) URL."},
            "headers": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "description": "Extra request headers.",
            },
        },
        ["url"],
    ),
]


def _function(tool: Any, where: str) -> dict[str, Any]:
    """The `function` part of one tool entry (OpenAI `{"type": "function", "function": ...}`
    or a bare function object), checked enough that calls can be validated against it."""
    # ~55 ms (measured): jsonschema only when a tools file is read; this module loads with
    # every command (the plugin imports its pipeline)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(tool, Mapping):
        raise InputError(f"{where}: a tool must be a JSON object")
    fn = tool.get("function", tool)
    if not isinstance(fn, Mapping):
        raise InputError(f"{where}: 'function' must be an object")
    name = fn.get("name")
    if not isinstance(name, str) or not name.replace("_", "a").replace("-", "a").isalnum():
        raise InputError(f"{where}: a tool needs a name of letters, digits, '_' or '-'")
    params = fn.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(params, Mapping) or params.get("type", "object") != "object":
        raise InputError(f"{where}: tool {name!r} parameters must be a JSON Schema object")
    try:
        Draft202012Validator.check_schema(params)
    except SchemaError as exc:
        raise InputError(f"{where}: tool {name!r} has an invalid schema: {exc.message}") from None
    return {
        "name": name,
        "description": str(fn.get("description") or ""),
        "parameters": dict(params),
    }


def normalize_tools(tools: Sequence[Any], where: str = "tools") -> list[Tool]:
    """OpenAI function tools (`{"type": "function", "function": {...}}`), names unique."""
    if not tools:
        raise InputError(f"{where}: the tool set is empty")
    out = [{"type": "function", "function": _function(t, where)} for t in tools]
    names = [t["function"]["name"] for t in out]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InputError(f"{where}: duplicate tool names {duplicates}")
    return out


def load_tools(path: str | None) -> list[Tool]:
    """The default tools, or those in a JSON file: a list of tools or `{"tools": [...]}`."""
    if path is None:
        return normalize_tools(DEFAULT_TOOLS)
    file = Path(path)
    if not file.is_file():
        raise InputError(f"tools_file {path!r} does not exist")
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"tools_file {path!r} is not valid JSON: {exc}") from None
    if isinstance(doc, Mapping) and "tools" in doc:
        doc = doc["tools"]
    if not isinstance(doc, list):
        raise InputError(
            f"tools_file {path!r} must hold a list of OpenAI tools or {{'tools': [...]}}"
        )
    return normalize_tools(doc, f"tools_file {path!r}")


@dataclass
class CallCheck:
    """What is wrong with a conversation's tool calls (all empty: nothing)."""

    unknown_tools: list[str] = field(default_factory=list)
    argument_errors: list[str] = field(default_factory=list)
    structure_errors: list[str] = field(default_factory=list)

    @property
    def is_valid(self) -> bool:
        return not (self.unknown_tools or self.argument_errors or self.structure_errors)

    def as_cell(self) -> dict[str, Any]:
        """The validation column's value: strings, not lists, so every row has the same Parquet
        type (an all-empty list column has no element type)."""
        errors = [*(f"unknown tool {n!r}" for n in self.unknown_tools), *self.argument_errors]
        return {
            "is_valid": self.is_valid,
            "unknown_tools": ", ".join(self.unknown_tools),
            "argument_errors": "; ".join(self.argument_errors),
            "structure_errors": "; ".join(self.structure_errors),
            "errors": "; ".join(errors + self.structure_errors),
        }


def parse_arguments(text: Any) -> dict[str, Any]:
    """A call's arguments as an object; ValueError says why they are not one."""
    if isinstance(text, Mapping):
        return dict(text)
    if not isinstance(text, str):
        raise ValueError("arguments are not JSON text")
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("arguments are not a JSON object")
    return value


def conversation_of(cell: Any) -> dict[str, Any] | None:
    """A conversation cell as plain dicts and lists (None when it holds none): DataFrames give
    dicts, Parquet read-backs numpy arrays, and some sinks JSON text."""
    value = plain(cell)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


class ToolSet:
    """The tools by name with one compiled validator each, to check many calls quickly."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        from jsonschema import Draft202012Validator  # (see _function)

        self.tools = list(tools)
        self.validators = {
            t["function"]["name"]: Draft202012Validator(t["function"]["parameters"]) for t in tools
        }

    def check(self, conversation: Any) -> CallCheck:
        """Check every call of a generated conversation (a dict of the Conversation schema)."""
        result = CallCheck()
        conversation = conversation_of(conversation)
        if conversation is None:
            result.structure_errors.append("conversation is missing")
            return result
        if not str(conversation.get("user_request") or "").strip():
            result.structure_errors.append("empty user request")
        if not str(conversation.get("final_answer") or "").strip():
            result.structure_errors.append("empty final answer")
        calls = [c for c in conversation.get("steps") or [] if isinstance(c, Mapping)]
        if not calls:
            result.structure_errors.append("no tool calls")
        for index, call in enumerate(calls, 1):
            name = call.get("name")
            validator = self.validators.get(name)
            if validator is None:
                result.unknown_tools.append(str(name))
                continue
            try:
                arguments = parse_arguments(call.get("arguments"))
            except ValueError as exc:
                result.argument_errors.append(f"call {index} ({name}): {exc}")
                continue
            for error in sorted(validator.iter_errors(arguments), key=lambda e: list(e.path)):
                where = "/".join(map(str, error.path)) or "arguments"
                result.argument_errors.append(f"call {index} ({name}) {where}: {error.message}")
        return result
