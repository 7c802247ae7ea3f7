"""Claude Code's built-in tools as JSON schemas, and schemas inferred for tools it does not know.

A library (bashgym-claude-tools) because two plugins describe Claude Code's tools: the claude-code
source (transcripts) and the claude-cli / agent-sdk executors (whose stream names the tools but
describes none); rows from either must carry the same schemas. Declared API: `schemas`,
`builtin`, `inferred`, `INFERRED_NOTE`.

Why: transcripts never store the tool definitions the model was given, and a tool-use SFT line
whose `tools` are empty stubs (`{"properties": {}}`) while its calls pass `file_path`, `command`
... teaches a model to call tools whose parameters it was never shown. So the names, parameters,
types and required fields of Claude Code's own tools are written down here, as the CLI sends
them (checked against its tool list and the calls recorded in real 1.0.x-2.1.x sessions);
the descriptions are our own short words, not the CLI's prompts. A tool that was renamed keeps
each of its names (Task became Agent; KillBash became KillShell), and tools of older versions
stay (LS, MultiEdit, NotebookRead, TodoRead), since old sessions call them.

Anything else a session calls (MCP tools, plugins, tools newer than this table) gets a schema
inferred from the arguments of its recorded calls by genson: the JSON types seen, and
`required` for the keys every call passed. It is marked as inferred in its description.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
from genson import SchemaBuilder

from bashgym.records import ToolCall, ToolSchema

INFERRED_NOTE = "Schema inferred from the recorded calls (Claude Code did not record it)."


def _obj(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    """An object schema; `__` in a keyword stands for `-` (Grep's `-A`, `-B`, ...)."""
    props = {name.replace("__", "-"): spec for name, spec in properties.items()}
    return {"type": "object", "properties": props, "required": required}


def _s(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **more}


def _n(description: str, kind: str = "number", **more: Any) -> dict[str, Any]:
    return {"type": kind, "description": description, **more}


def _b(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


_AGENT = (
    "Start a subagent on a self-contained task; it works on its own and returns one final report.",
    _obj(
        ["description", "prompt"],
        description=_s("A few words naming the task."),
        prompt=_s("The full task for the subagent, with everything it needs to know."),
        subagent_type=_s("Which kind of agent to start (general-purpose, Explore, Plan, ...)."),
        model=_s("Model for the subagent.", enum=["sonnet", "opus", "haiku"]),
        run_in_background=_b("Return at once and let the subagent work in the background."),
        resume=_s("Id of an earlier subagent to continue."),
    ),
)
_TODOS = {
    "type": "array",
    "description": "The whole todo list, replacing the previous one.",
    "items": {
        "type": "object",
        "properties": {
            "content": _s("What is to be done, in the imperative."),
            "status": _s("Its state.", enum=["pending", "in_progress", "completed"]),
            "activeForm": _s("The same task in the present continuous, shown while it runs."),
            "id": _s("Item id (older versions)."),
            "priority": _s("Item priority (older versions).", enum=["high", "medium", "low"]),
        },
        "required": ["content", "status"],
    },
}
_EDIT = {
    "type": "object",
    "properties": {
        "old_string": _s("Exact text to replace."),
        "new_string": _s("Text to put in its place."),
        "replace_all": _b("Replace every occurrence, not just a unique one."),
    },
    "required": ["old_string", "new_string"],
}

BUILTIN: dict[str, tuple[str, dict[str, Any]]] = {
    "Bash": (
        "Run a shell command in a persistent shell and return its output.",
        _obj(
            ["command"],
            command=_s("The command to run."),
            timeout=_n("Time limit in milliseconds (at most 600000)."),
            description=_s("Five to ten words saying what the command does."),
            run_in_background=_b("Start the command in the background; read it later."),
            dangerouslyDisableSandbox=_b("Run outside the sandbox."),
        ),
    ),
    "BashOutput": (
        "Read new output of a background shell.",
        _obj(
            ["bash_id"],
            bash_id=_s("Id of the background shell."),
            filter=_s("Regular expression; only matching lines are returned."),
        ),
    ),
    "KillShell": (
        "Stop a background shell.",
        _obj(["shell_id"], shell_id=_s("Id of the background shell.")),
    ),
    "KillBash": (
        "Stop a background shell (older name of KillShell).",
        _obj(["shell_id"], shell_id=_s("Id of the background shell.")),
    ),
    "Read": (
        "Read a file (text with line numbers, images, PDFs, notebooks).",
        _obj(
            ["file_path"],
            file_path=_s("Absolute path of the file."),
            offset=_n("Line number to start at.", "integer"),
            limit=_n("Number of lines to read.", "integer"),
            pages=_s("Page range of a PDF, e.g. 1-5."),
        ),
    ),
    "Write": (
        "Create or overwrite a file with the given content.",
        _obj(
            ["file_path", "content"],
            file_path=_s("Absolute path of the file."),
            content=_s("The whole new content."),
        ),
    ),
    "Edit": (
        "Replace an exact string in a file.",
        _obj(
            ["file_path", "old_string", "new_string"],
            file_path=_s("Absolute path of the file."),
            old_string=_s("Exact text to replace; must be unique unless replace_all."),
            new_string=_s("Text to put in its place."),
            replace_all=_b("Replace every occurrence."),
        ),
    ),
    "MultiEdit": (
        "Apply several exact-string replacements to one file, in order, all or none.",
        _obj(
            ["file_path", "edits"],
            file_path=_s("Absolute path of the file."),
            edits={"type": "array", "items": _EDIT, "minItems": 1, "description": "The edits."},
        ),
    ),
    "Glob": (
        "Find files whose path matches a glob pattern, newest first.",
        _obj(
            ["pattern"],
            pattern=_s("Glob pattern, e.g. **/*.py."),
            path=_s("Folder to search in; default: the working directory."),
        ),
    ),
    "Grep": (
        "Search file contents with a regular expression (ripgrep).",
        _obj(
            ["pattern"],
            pattern=_s("Regular expression to search for."),
            path=_s("File or folder to search in; default: the working directory."),
            glob=_s("Only files matching this glob."),
            output_mode=_s("What to return.", enum=["content", "files_with_matches", "count"]),
            __B=_n("Lines of context before each match (content mode)."),
            __A=_n("Lines of context after each match (content mode)."),
            __C=_n("Lines of context around each match (content mode)."),
            context=_n("Lines of context around each match (content mode)."),
            __n=_b("Show line numbers (content mode)."),
            __i=_b("Case-insensitive search."),
            type=_s("File type to search, e.g. py, js, rust."),
            head_limit=_n("Return only the first N results."),
            offset=_n("Skip the first N results."),
            multiline=_b("Let patterns span lines."),
        ),
    ),
    "LS": (
        "List a folder (older versions).",
        _obj(
            ["path"],
            path=_s("Absolute path of the folder."),
            ignore=_strings("Glob patterns to leave out."),
        ),
    ),
    "Task": _AGENT,
    "Agent": _AGENT,
    "TodoWrite": ("Write the session's todo list.", _obj(["todos"], todos=_TODOS)),
    "TodoRead": ("Read the session's todo list (older versions).", _obj([])),
    "WebFetch": (
        "Fetch a URL and answer a prompt about its content.",
        _obj(
            ["url", "prompt"],
            url=_s("The URL to fetch.", format="uri"),
            prompt=_s("What to extract from the page."),
        ),
    ),
    "WebSearch": (
        "Search the web and return results with links.",
        _obj(
            ["query"],
            query=_s("The search query."),
            allowed_domains=_strings("Only results from these domains."),
            blocked_domains=_strings("Never results from these domains."),
        ),
    ),
    "NotebookEdit": (
        "Replace, insert or delete a cell of a Jupyter notebook.",
        _obj(
            ["notebook_path", "new_source"],
            notebook_path=_s("Absolute path of the notebook."),
            new_source=_s("New source of the cell."),
            cell_id=_s("Id of the cell to change (or to insert after)."),
            cell_type=_s("Cell type.", enum=["code", "markdown"]),
            edit_mode=_s("What to do.", enum=["replace", "insert", "delete"]),
        ),
    ),
    "NotebookRead": (
        "Read a Jupyter notebook's cells and outputs (older versions).",
        _obj(
            ["notebook_path"],
            notebook_path=_s("Absolute path of the notebook."),
            cell_id=_s("Only this cell."),
        ),
    ),
    "ExitPlanMode": (
        "Present the plan and ask the user to approve leaving plan mode.",
        _obj([], plan=_s("The plan, in markdown.")),
    ),
    "EnterPlanMode": ("Switch to plan mode: research and plan, change nothing.", _obj([])),
    "SlashCommand": (
        "Run a custom slash command.",
        _obj(["command"], command=_s("The command with its arguments, e.g. /review 12.")),
    ),
    "Skill": (
        "Load a skill's instructions into the conversation.",
        _obj(["skill"], skill=_s("Name of the skill."), args=_s("Arguments for the skill.")),
    ),
    "TaskOutput": (
        "Get the output of a background task or agent.",
        _obj(
            ["task_id"],
            task_id=_s("Id of the task."),
            block=_b("Wait for the task to finish."),
            timeout=_n("Longest wait in milliseconds."),
        ),
    ),
    "AskUserQuestion": (
        "Ask the user multiple-choice questions and wait for the answers.",
        _obj(
            ["questions"],
            questions={
                "type": "array",
                "description": "The questions to ask.",
                "items": {
                    "type": "object",
                    "properties": {
                        "question": _s("The question."),
                        "header": _s("A short label for it."),
                        "options": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "properties": {
                                    "label": _s("The choice."),
                                    "description": _s("What choosing it means."),
                                },
                                "required": ["label"],
                            },
                        },
                        "multiSelect": _b("Allow several answers."),
                    },
                    "required": ["question", "options"],
                },
            },
        ),
    ),
}


def builtin(name: str) -> ToolSchema | None:
    """Claude Code's schema for `name`, or None for a tool it does not ship."""
    known = BUILTIN.get(name)
    if known is None:
        return None
    description, parameters = known
    return ToolSchema.model_construct(
        name=name, description=description, parameters=orjson.loads(orjson.dumps(parameters))
    )


def inferred(name: str, calls: Iterable[ToolCall]) -> ToolSchema:
    """A schema for a tool Claude Code did not describe, from the arguments of its calls."""
    builder = SchemaBuilder(schema_uri=None)
    builder.add_schema({"type": "object", "properties": {}})
    for call in calls:
        args = call.arguments_dict()
        if "_raw" not in args:
            builder.add_object(args)
    parameters = builder.to_schema()
    parameters.setdefault("properties", {})
    return ToolSchema.model_construct(name=name, description=INFERRED_NOTE, parameters=parameters)


def schemas(names: Iterable[str], calls: Iterable[ToolCall]) -> list[ToolSchema]:
    """One schema per tool name, in order: Claude Code's own, else inferred from `calls`."""
    by_name: dict[str, list[ToolCall]] = {}
    for call in calls:
        by_name.setdefault(call.name, []).append(call)
    out = []
    for name in dict.fromkeys(names):
        out.append(builtin(name) or inferred(name, by_name.get(name, ())))
    return out
