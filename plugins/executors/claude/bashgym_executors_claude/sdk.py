"""The agent-sdk executor: the same Claude Code run through `claude-agent-sdk`'s `query()`.

The SDK's typed messages are turned back into the stream-json dicts they were parsed from
(`as_stream`), so one TraceBuilder maps both executors and their Traces agree. The CLI starts
through `wrapper.Launcher` (the task's environment, its own process group, stopped as a whole).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections import deque
from typing import Any

from bashgym.contracts import Executor, InputError, RunContext, TaskContext
from bashgym.events import TaskOutput
from bashgym.records import Task, WorkerResult
from bashgym_executors_claude import finish
from bashgym_executors_claude.launch import (
    child_env,
    connection,
    find_claude,
    system_append,
    task_limits,
)
from bashgym_executors_claude.options import ClaudeOptions
from bashgym_executors_claude.outcome import Ending, ending
from bashgym_executors_claude.stream import TraceBuilder
from bashgym_executors_claude.wrapper import Launcher

BLOCK_TYPES = {
    "TextBlock": "text",
    "ThinkingBlock": "thinking",
    "ToolUseBlock": "tool_use",
    "ToolResultBlock": "tool_result",
    "ServerToolUseBlock": "server_tool_use",
    "ServerToolResultBlock": "server_tool_result",
}


def _block(block: Any) -> dict[str, Any]:
    fields = dataclasses.asdict(block) if dataclasses.is_dataclass(block) else dict(block)
    return {"type": BLOCK_TYPES.get(type(block).__name__, "unknown"), **fields}


def as_stream(message: Any) -> dict[str, Any] | None:
    """An SDK message as the stream-json line it came from (None: not part of a Trace)."""
    # ~0.45 s (measured): the SDK only when this executor runs, not in every command
    from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, UserMessage

    if isinstance(message, SystemMessage):
        return {**message.data, "type": "system", "subtype": message.subtype}
    if isinstance(message, AssistantMessage):
        return {
            "type": "assistant",
            "parent_tool_use_id": message.parent_tool_use_id,
            "message": {
                "id": message.message_id,
                "model": message.model,
                "content": [_block(b) for b in message.content],
                "usage": message.usage,
            },
        }
    if isinstance(message, UserMessage):
        content = message.content
        return {
            "type": "user",
            "parent_tool_use_id": message.parent_tool_use_id,
            "message": {
                "role": "user",
                "content": content if isinstance(content, str) else [_block(b) for b in content],
            },
        }
    if isinstance(message, ResultMessage):
        raw = dataclasses.asdict(message)
        raw["modelUsage"] = raw.pop("model_usage", None)
        return {**raw, "type": "result"}
    return None


def sdk_options(
    task: Task, options: ClaudeOptions, ctx: TaskContext, *, cli_path: str, model: str | None,
    env: dict[str, str], stderr: deque[str],
) -> Any:  # fmt: skip
    from claude_agent_sdk import ClaudeAgentOptions  # (see above)

    turns, budget = task_limits(options, ctx)
    system: dict[str, Any] = {"type": "preset", "preset": "claude_code"}  # None would send ""
    append = system_append(options)
    if append:
        system["append"] = append
    allowed = options.allowed_tools
    extra: dict[str, str | None] = {}
    if not options.persist_session:
        extra["no-session-persistence"] = None
    return ClaudeAgentOptions(
        cwd=str(ctx.workspace),
        cli_path=cli_path,
        env=env,
        system_prompt=system,  # type: ignore[arg-type]
        permission_mode=options.permission_mode,  # type: ignore[arg-type]
        max_turns=turns,
        max_budget_usd=budget,
        allowed_tools=allowed or [],
        disallowed_tools=options.disallowed_tools or [],
        tools=options.tools,
        model=model,
        resume=task.metadata.get("resume") or options.resume,
        output_format=(
            {"type": "json_schema", "schema": options.json_schema}
            if options.json_schema is not None
            else None
        ),
        extra_args=extra,
        stderr=stderr.append,
    )


class AgentSdk(Executor[ClaudeOptions]):
    """Claude Code through claude-agent-sdk (its wheel bundles the CLI), mapped to a Trace."""

    name = "agent-sdk"
    needs_network = True

    def preflight(self, options: ClaudeOptions, run: RunContext) -> None:
        find_claude(options.claude_path)  # no binary: one line before any task, not per task

    async def run(self, task: Task, options: ClaudeOptions, ctx: TaskContext) -> WorkerResult:
        from claude_agent_sdk import query  # (see above)

        try:
            conn = connection(options, ctx)
            claude = find_claude(options.claude_path)
        except InputError as exc:
            return WorkerResult.failed(task, self.name, "error", str(exc))
        argv, env = ctx.env.argv([claude])
        env = child_env(env, conn, options, telemetry=ctx.run.settings.telemetry)
        launcher = Launcher(argv, env)
        stderr: deque[str] = deque(maxlen=40)
        opts = sdk_options(
            task, options, ctx, cli_path=str(launcher.path), model=conn.model, env=env,
            stderr=stderr,
        )  # fmt: skip
        builder = TraceBuilder(task.id, task.prompt, executor=self.name, cwd=str(ctx.workspace))

        async def consume() -> None:
            stream = query(prompt=task.prompt, options=opts)
            try:
                async for message in stream:
                    line = as_stream(message)
                    note = builder.feed(line) if line is not None else None
                    if note:
                        ctx.emit(TaskOutput(task_id=task.id, text=note))
            finally:
                await stream.aclose()

        reader = asyncio.ensure_future(consume())
        end: Ending | None = None
        try:
            try:
                async with asyncio.timeout(finish.own_timeout(ctx)):
                    await asyncio.shield(reader)
            except TimeoutError:
                end = finish.timeout_ending(task)
            except Exception as exc:  # noqa: BLE001 -- the SDK raises for a failed CLI
                if builder.result is None:  # after a result, the exit code says nothing new
                    end = ending(
                        None, streamed_denials=builder.denials, stderr="\n".join(stderr) or str(exc)
                    )
        finally:
            if not reader.done():  # deadline, cancellation or a crash here
                await asyncio.shield(launcher.stop(reader, finish.stop_grace(ctx)))
                reader.cancel()
                with contextlib.suppress(BaseException):
                    await asyncio.shield(reader)
            launcher.remove()
        if end is None:
            end = ending(
                builder.result,
                streamed_denials=builder.denials,
                synthetic=builder.synthetic[-1] if builder.synthetic else None,
            )
        return finish.result(
            task, builder, end, ctx,
            executor=self.name, alias=conn.alias, system_prompt=system_append(options),
        )  # fmt: skip
