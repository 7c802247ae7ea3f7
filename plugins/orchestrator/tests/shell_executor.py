"""A test executor plugin (loaded with --plugin): runs the ```sh block of its task's prompt in
the task's environment session, a real process, and charges the `cost: X` the prompt names.
`cost: unknown` charges tokens at no known price (a model without one). Deterministic per task
whatever order workers take tasks in, unlike a FIFO script."""

from __future__ import annotations

import json
import re
from typing import Any

from bashgym import hookimpl
from bashgym.contracts import Executor, NoOptions, TaskContext
from bashgym.records import Message, Outcome, Provenance, Task, ToolCall, Trace, Usage, WorkerResult

BLOCK = re.compile(r"```sh\n(.*?)```", re.DOTALL)
RESOLVE = re.compile(r"```resolve\n(.*?)```", re.DOTALL)  # run when asked to resolve a conflict
COST = re.compile(r"^cost: ([0-9.]+|unknown)$", re.MULTILINE)  # unknown: a model with no price


class ShellExecutor(Executor[NoOptions]):
    """Runs the prompt's ```sh block (```resolve for a merge conflict); success: exit 0."""

    async def run(self, task: Task, options: NoOptions, ctx: TaskContext) -> WorkerResult:
        block = RESOLVE if task.prompt.startswith("Resolve a git merge conflict") else BLOCK
        found = block.search(task.prompt)
        command = found.group(1) if found else "true"
        done = await ctx.env.run(command, timeout=120)
        said = m.group(1) if (m := COST.search(task.prompt)) else "0"
        cost = None if said == "unknown" else float(said)
        usage = Usage(input_tokens=len(task.prompt.split()), output_tokens=5)
        ctx.charge(usage, cost, model="shell")
        call = ToolCall(id="call_1", name="Bash", arguments=json.dumps({"command": command}))
        trace = Trace(
            id=f"{task.id}-{task.metadata.get('attempt')}",
            messages=[
                Message(role="user", content=task.prompt),
                Message(role="assistant", content="running it", tool_calls=[call]),
                Message(role="tool", content=done.output, tool_call_id="call_1", name="Bash"),
                Message(role="assistant", content="done" if done.ok else "it failed"),
            ],
            usage=usage,
            cost_usd=cost,
            outcome=Outcome(success=done.ok, num_turns=2),
            provenance=Provenance(source="executor", executor="shell", model="shell"),
        )
        status = "success" if done.ok else "failed"
        reason = None if done.ok else f"command {done.reason}: {done.output.strip()[-200:]}"
        return WorkerResult(
            task_id=task.id,
            executor="shell",
            status=status,
            reason=reason,
            trace=trace,
            final_text=done.output[-500:],
        )


@hookimpl
def register_executors(register: Any) -> None:
    register("shell", ShellExecutor())
    register("shell-teacher", ShellExecutor())  # a router's teacher must be another executor
