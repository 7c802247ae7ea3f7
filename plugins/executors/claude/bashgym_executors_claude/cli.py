"""The claude-cli executor: `claude -p --output-format stream-json --verbose`, line by line.

The child starts through the task's environment (`ctx.env.argv`), in its own process group
that dies with BashGym; each stdout line feeds the Trace and the live progress as it comes. At
the deadline, on cancellation, or on any error, the whole group is stopped (TERM, then KILL).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque

import bashgym_procs as procs

from bashgym.contracts import Executor, InputError, RunContext, TaskContext
from bashgym.events import TaskOutput
from bashgym.records import Task, WorkerResult
from bashgym_executors_claude import finish
from bashgym_executors_claude.launch import (
    child_env,
    cli_args,
    connection,
    find_claude,
    system_append,
)
from bashgym_executors_claude.options import ClaudeOptions
from bashgym_executors_claude.outcome import ending
from bashgym_executors_claude.stream import TraceBuilder

LINE_LIMIT = 64 * 1024 * 1024  # one stream-json line holds a whole tool result


class ClaudeCli(Executor[ClaudeOptions]):
    """Claude Code headless (`claude -p`, stream-json), mapped to a normalized Trace."""

    name = "claude-cli"
    needs_network = True  # `claude` calls its model API from inside the environment

    def preflight(self, options: ClaudeOptions, run: RunContext) -> None:
        find_claude(options.claude_path)  # no binary: one line before any task, not per task

    async def run(self, task: Task, options: ClaudeOptions, ctx: TaskContext) -> WorkerResult:
        try:
            conn = connection(options, ctx)
            claude = find_claude(options.claude_path)
        except InputError as exc:
            return WorkerResult.failed(task, self.name, "error", str(exc))
        argv, env = ctx.env.argv([claude, *cli_args(task, options, ctx, conn)])
        env = child_env(env, conn, options, telemetry=ctx.run.settings.telemetry)
        builder = TraceBuilder(task.id, task.prompt, executor=self.name, cwd=str(ctx.workspace))
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=ctx.workspace, env=env, limit=LINE_LIMIT,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True,
            preexec_fn=procs.child_setup(),
        )  # fmt: skip
        stderr: deque[str] = deque(maxlen=40)
        drain = asyncio.create_task(_tail(proc, stderr))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(finish.own_timeout(ctx)):
                    await _read(proc, builder, ctx, task.id)
                    await proc.wait()
            except TimeoutError:
                timed_out = True
        finally:
            if proc.returncode is None:  # deadline, cancellation or a crash here
                await asyncio.shield(procs.astop(proc, grace=finish.stop_grace(ctx)))
            drain.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drain
        end = (
            finish.timeout_ending(task)
            if timed_out
            else ending(
                builder.result,
                streamed_denials=builder.denials,
                exit_code=proc.returncode,
                stderr="\n".join(stderr),
                synthetic=builder.synthetic[-1] if builder.synthetic else None,
            )
        )
        return finish.result(
            task, builder, end, ctx,
            executor=self.name, alias=conn.alias, system_prompt=system_append(options),
        )  # fmt: skip


async def _read(
    proc: asyncio.subprocess.Process, builder: TraceBuilder, ctx: TaskContext, task_id: str
) -> None:
    assert proc.stdout is not None
    async for raw in proc.stdout:
        try:
            line = json.loads(raw)
        except ValueError:  # a stray non-JSON line (a warning) is not part of the stream
            continue
        if isinstance(line, dict):
            note = builder.feed(line)
            if note:
                ctx.emit(TaskOutput(task_id=task_id, text=note))


async def _tail(proc: asyncio.subprocess.Process, keep: deque[str]) -> None:
    assert proc.stderr is not None
    async for raw in proc.stderr:
        keep.append(raw.decode("utf-8", "replace").rstrip())
