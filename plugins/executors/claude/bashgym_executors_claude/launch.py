"""Where `claude` is, how it reaches its model, and the flags of one task.

The endpoint, the key's env var NAME, the model and the retry count come from a model alias in
settings (provider anthropic), never from a literal key in a run file: the key's value is read
from that env var when the task starts and handed to the child as ANTHROPIC_API_KEY.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from bashgym.contracts import InputError, TaskContext
from bashgym.records import Task
from bashgym_executors_claude.options import BYPASS_MODES, ClaudeOptions

# Claude Code's own configuration, passed through when no alias configures it (an environment
# may hand its commands a scrubbed env; these are what `claude` needs to reach its model).
PASS_THROUGH = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


def find_claude(path: str | None = None) -> str:
    """`path`, else `claude` on PATH, else the binary bundled in the claude-agent-sdk wheel."""
    if path:
        found = shutil.which(path)
        if not found:
            raise InputError(f"claude_path {path!r}: no such executable")
        return found
    on_path = shutil.which("claude")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("claude_agent_sdk")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        bundled = Path(folder) / "_bundled" / "claude"
        if bundled.is_file() and os.access(bundled, os.X_OK):
            return str(bundled)
    raise InputError(
        "no `claude` binary: install claude-agent-sdk (its wheel bundles one), put claude on "
        "PATH, or set the executor option claude_path"
    )


@dataclass
class Connection:
    """The child's model settings: env vars for Claude Code, and the model id."""

    env: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    alias: str | None = None


def connection(options: ClaudeOptions, ctx: TaskContext) -> Connection:
    """From the alias `options.model_alias` when settings define it; else Claude Code's own."""
    name = options.model_alias
    if name not in ctx.run.settings.models:
        passed = {k: os.environ[k] for k in PASS_THROUGH if os.environ.get(k)}
        return Connection(env=passed, model=options.model)
    provider = ctx.run.settings.models[name].provider
    if provider != "anthropic":
        raise InputError(
            f"model alias {name!r} has provider {provider}; Claude Code needs an alias with "
            "provider anthropic (set executor.model_alias, or models.<alias>.provider)"
        )
    resolved = ctx.models.resolve(name)
    env = {"ANTHROPIC_BASE_URL": resolved.endpoint}
    if resolved.api_key_env:  # the key's value, read now, handed to the child only
        key = os.environ.get(resolved.api_key_env)
        if not key:
            raise InputError(
                f"model alias {name!r} needs an API key: set the environment variable "
                f"{resolved.api_key_env}"
            )
        env["ANTHROPIC_API_KEY"] = key
    params = resolved.params
    retries = params.get("max_retries", params.get("num_retries"))
    if retries is not None:
        env["CLAUDE_CODE_MAX_RETRIES"] = str(int(retries))
    if params.get("timeout") is not None:
        env["API_TIMEOUT_MS"] = str(int(float(params["timeout"]) * 1000))
    return Connection(env=env, model=options.model or resolved.model, alias=name)


def child_env(
    base: dict[str, str], conn: Connection, options: ClaudeOptions, *, telemetry: bool
) -> dict[str, str]:
    """The environment's env for the child, plus what Claude Code needs."""
    env = {**base, **conn.env}
    if options.config_dir:
        env["CLAUDE_CONFIG_DIR"] = str(Path(options.config_dir).expanduser())
    if not telemetry:
        env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    if options.permission_mode in BYPASS_MODES and os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"  # as root Claude Code refuses bypass mode without it
    return env


def task_limits(options: ClaudeOptions, ctx: TaskContext) -> tuple[int | None, float | None]:
    """Max turns and budget from the options; the budget also within what is left of the
    run's and the task's cap."""
    caps = [c for c in (options.max_budget_usd, ctx.budget.left_usd) if c]
    return options.max_turns, (min(caps) if caps else None)


def system_append(options: ClaudeOptions) -> str | None:
    return options.append_system_prompt or None


def cli_args(task: Task, options: ClaudeOptions, ctx: TaskContext, conn: Connection) -> list[str]:
    """`claude -p` flags for one task (the prompt goes last, after `--`)."""
    args = ["-p", "--output-format", "stream-json", "--verbose"]
    args += ["--permission-mode", options.permission_mode]
    turns, budget = task_limits(options, ctx)
    if turns:
        args += ["--max-turns", str(turns)]
    if budget:
        args += ["--max-budget-usd", f"{budget:.6f}"]
    for flag, values in (
        ("--allowedTools", options.allowed_tools),
        ("--disallowedTools", options.disallowed_tools),
        ("--tools", options.tools),
    ):
        if values is not None:
            args += [flag, ",".join(values)]
    if conn.model:
        args += ["--model", conn.model]
    append = system_append(options)
    if append:
        args += ["--append-system-prompt", append]
    if options.json_schema is not None:
        args += ["--json-schema", json.dumps(options.json_schema)]
    resume = task.metadata.get("resume") or options.resume
    if resume:
        args += ["--resume", str(resume)]
    if not options.persist_session:
        args.append("--no-session-persistence")
    return [*args, "--", task.prompt]
