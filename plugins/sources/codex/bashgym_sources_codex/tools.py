"""The Codex CLI's built-in tools as JSON schemas (data), for the tools a rollout's calls name.

Why: a rollout never stores the tool definitions the model was given (only `dynamic_tools` in
`session_meta`, for tools added from outside). A tool-use SFT line whose `tools` show
`{"properties": {}}` while its calls pass `cmd`, `workdir` and `yield_time_ms` teaches a model to
call tools whose parameters it was never shown; and a tool listed by name alone counts as
declared, so the nemo-jsonl sink would not infer its parameters either. So the Codex CLI's own
tools are written down here: names, parameters, types and required fields as the calls in
rollouts of CLI 0.1x-0.9x pass them and as Codex's tool specs (`codex-rs/core/src/tools/spec.rs`)
declare them; the descriptions are our own short words. Tools of every CLI generation stay
(`container.exec` and `shell` of the first ones, `unified_exec`, `exec_command` and
`write_stdin` of later ones, `shell_command`), since old rollouts call them.

A tool not in this table is left out of the trace's `tools` (the sink then infers its schema
from the calls and counts the line as inferred): an empty schema would claim to know it.
`declared` also adds a parameter that a call passes and the table lacks (a newer CLI's), typed
from the values seen, so no call passes what its schema does not show.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from bashgym.records import ToolCall, ToolSchema

FREEFORM_NOTE = "Codex freeform tool; arguments: {input: raw text}."


def _s(description: str, **more: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **more}


def _n(description: str) -> dict[str, Any]:
    return {"type": "number", "description": description}


def _b(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description}


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _obj(required: list[str], **properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required}


_ESCALATION = {
    "sandbox_permissions": _s(
        "`require_escalated` asks to run outside the sandbox; `use_default` otherwise."
    ),
    "justification": _s("Why the command needs to run outside the sandbox (one sentence)."),
    "with_escalated_permissions": _b("Ask to run outside the sandbox (older CLIs)."),
    "prefix_rule": _strings("A command prefix the user may approve for later calls too."),
}
_SHELL_ARGV = _obj(
    ["command"],
    command=_strings("The program and its arguments, passed to execvp (e.g. bash -lc '...')."),
    workdir=_s("Directory to run it in."),
    timeout_ms=_n("Time limit in milliseconds."),
    timeout=_n("Time limit in milliseconds (older CLIs)."),
    **_ESCALATION,
)
_OUTPUT_WAIT = {
    "yield_time_ms": _n("How long to wait for output before returning, in milliseconds."),
    "max_output_tokens": _n("Most tokens of output to return; the rest is cut."),
}
_AGENT_ID = _s("Id of the subagent.")

BUILTIN: dict[str, tuple[str, dict[str, Any]]] = {
    "shell": ("Run a command and return its output.", _SHELL_ARGV),
    "container.exec": ("Run a command and return its output (first CLIs' name).", _SHELL_ARGV),
    "shell_command": (
        "Run a shell script in the user's shell and return its output.",
        _obj(
            ["command"],
            command=_s("The script to run."),
            workdir=_s("Directory to run it in."),
            login=_b("Run a login shell (default true)."),
            timeout_ms=_n("Time limit in milliseconds."),
            **_ESCALATION,
        ),
    ),
    "exec_command": (
        "Run a command in a terminal; return its output, or a session id while it still runs.",
        _obj(
            ["cmd"],
            cmd=_s("The shell command to run."),
            workdir=_s("Directory to run it in (default: the turn's directory)."),
            shell=_s("Shell binary to start (default /bin/bash)."),
            login=_b("Run a login shell (default true)."),
            tty=_b("Give the command a terminal (PTY)."),
            **_OUTPUT_WAIT,
            **_ESCALATION,
        ),
    ),
    "write_stdin": (
        "Write to a running exec_command session and return its new output.",
        _obj(
            ["session_id"],
            session_id=_n("Id of the running session."),
            chars=_s("Text to write to its stdin (empty to just read)."),
            **_OUTPUT_WAIT,
        ),
    ),
    "unified_exec": (
        "Run a command, or write to a running session, and return its output.",
        _obj(
            ["input"],
            input=_strings("The command and its arguments, or the text to write to the session."),
            session_id=_s("Id of a running session to write to."),
            timeout_ms=_n("How long to wait for output, in milliseconds."),
        ),
    ),
    "local_shell": (
        "Run a command on the local machine (the Responses API's local shell).",
        _obj(
            ["command"],
            type=_s("The action; always exec.", enum=["exec"]),
            command=_strings("The program and its arguments."),
            timeout_ms={"type": ["number", "null"], "description": "Time limit in milliseconds."},
            working_directory={"type": ["string", "null"], "description": "Directory to run in."},
            env={
                "type": ["object", "null"],
                "additionalProperties": {"type": "string"},
                "description": "Environment variables to set.",
            },
            user={"type": ["string", "null"], "description": "User to run it as."},
        ),
    ),
    "apply_patch": (
        "Edit files with a patch in Codex's format (*** Begin Patch ... *** End Patch).",
        _obj(["input"], input=_s("The whole patch.")),
    ),
    "update_plan": (
        "Replace the task plan: its steps, each with its status.",
        _obj(
            ["plan"],
            explanation=_s("Why the plan changed."),
            plan={
                "type": "array",
                "description": "The steps, in order.",
                "items": _obj(
                    ["step", "status"],
                    step=_s("What is to be done."),
                    status=_s("Its state.", enum=["pending", "in_progress", "completed"]),
                ),
            },
        ),
    ),
    "view_image": (
        "Show an image file from the workspace to the model.",
        _obj(["path"], path=_s("Path of the image file.")),
    ),
    "read_file": (
        "Read lines of a file.",
        _obj(
            ["file_path"],
            file_path=_s("Absolute path of the file."),
            offset=_n("Line number to start at (1-based)."),
            limit=_n("Most lines to return."),
            mode=_s("slice (plain lines) or indentation (the block around a line)."),
            indentation={"type": "object", "description": "Options of the indentation mode."},
        ),
    ),
    "list_dir": (
        "List a directory's entries.",
        _obj(
            ["dir_path"],
            dir_path=_s("Absolute path of the directory."),
            offset=_n("Entry number to start at (1-based)."),
            limit=_n("Most entries to return."),
            depth=_n("How many levels deep to go."),
        ),
    ),
    "grep_files": (
        "Find the files whose contents match a regular expression.",
        _obj(
            ["pattern"],
            pattern=_s("The regular expression."),
            include=_s("Glob of the files to search (e.g. *.rs)."),
            path=_s("Directory or file to search (default: the working directory)."),
            limit=_n("Most file paths to return."),
        ),
    ),
    "list_mcp_resources": (
        "List the resources MCP servers offer.",
        _obj([], server=_s("Only this server's."), cursor=_s("Where the last page ended.")),
    ),
    "list_mcp_resource_templates": (
        "List the resource templates MCP servers offer.",
        _obj([], server=_s("Only this server's."), cursor=_s("Where the last page ended.")),
    ),
    "read_mcp_resource": (
        "Read one resource of an MCP server.",
        _obj(["server", "uri"], server=_s("The server's name."), uri=_s("The resource's URI.")),
    ),
    "spawn_agent": (
        "Start a subagent with a task; returns its id.",
        _obj(
            ["message"],
            message=_s("The task for the subagent."),
            agent_type=_s("Which kind of agent to start."),
        ),
    ),
    "send_input": (
        "Send a message to a running subagent.",
        _obj(
            ["id", "message"],
            id=_AGENT_ID,
            message=_s("The message."),
            interrupt=_b("Stop what it is doing first."),
        ),
    ),
    "wait": (
        "Wait for subagents to finish.",
        _obj(["ids"], ids=_strings("Ids of the subagents."), timeout_ms=_n("Longest wait (ms).")),
    ),
    "close_agent": ("Stop a subagent.", _obj(["id"], id=_AGENT_ID)),
    "resume_agent": ("Resume a stopped subagent.", _obj(["id"], id=_AGENT_ID)),
}

_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),  # before int: a bool is an int in Python
    (int, "number"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: Any) -> str | None:
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return None  # null: says nothing about the type


def builtin(name: str) -> ToolSchema | None:
    """The Codex CLI's schema for `name` (a copy), or None for a tool it does not ship."""
    known = BUILTIN.get(name)
    if known is None:
        return None
    description, parameters = known
    return ToolSchema(name=name, description=description, parameters=copy.deepcopy(parameters))


def freeform(name: str) -> ToolSchema:
    """A freeform (custom) tool the table lacks: the reader passes its raw text as
    `{"input": text}`, so that much of its shape is known."""
    parameters = _obj(["input"], input=_s("The tool's raw text input."))
    return ToolSchema(name=name, description=FREEFORM_NOTE, parameters=parameters)


def declared(schema: ToolSchema, calls: Iterable[ToolCall]) -> ToolSchema:
    """`schema` with any parameter its `calls` pass and it lacks added, typed from the values
    seen (a parameter of a CLI newer than the table)."""
    properties = schema.parameters.setdefault("properties", {})
    for call in calls:
        args = call.arguments_dict()
        if "_raw" in args:
            continue
        for key, value in args.items():
            if key in properties:
                continue
            kind = _json_type(value)
            properties[key] = {"type": kind} if kind else {}
    return schema
