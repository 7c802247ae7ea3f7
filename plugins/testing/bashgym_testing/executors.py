"""A scripted executor, so code that runs executors is testable without a model.

Like simonw/llm's `MockModel.enqueue()`: queue what the next tasks should return — text, a
status, usage and cost, a delay, an exception — and the executor hands those back in order (or
"done" when the queue is empty), recording every task it was given.

    executor = ScriptedExecutor()
    executor.enqueue("wrote hello.py", usage=Usage(input_tokens=10), cost_usd=0.01)
    executor.enqueue(status="failed", reason="tests fail")
    register_plugin(executor.plugin())
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from bashgym import hookimpl
from bashgym.contracts import Executor, NoOptions, TaskContext
from bashgym.records import Message, Outcome, Provenance, Status, Task, Trace, Usage, WorkerResult


@dataclass
class Scripted:
    text: str = "done"
    status: Status = "success"
    reason: str | None = None
    delay: float = 0.0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    raises: BaseException | None = None
    write: dict[str, str] = field(default_factory=dict)  # files to write in the workspace


class ScriptedExecutor(Executor[NoOptions]):
    """Answers each task with the next scripted reply."""

    name = "scripted"

    def __init__(self) -> None:
        self.queue: deque[Scripted] = deque()
        self.tasks: list[Task] = []

    def enqueue(self, text: str = "done", **fields: Any) -> ScriptedExecutor:
        self.queue.append(Scripted(text=text, **fields))
        return self

    async def run(self, task: Task, options: NoOptions, ctx: TaskContext) -> WorkerResult:
        self.tasks.append(task)
        reply = self.queue.popleft() if self.queue else Scripted()
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raises is not None:
            raise reply.raises
        for path, content in reply.write.items():
            ctx.env.workspace.write(path, content)
        ctx.charge(reply.usage, reply.cost_usd, model="scripted")
        trace = Trace(
            id=task.id,
            messages=[
                Message(role="user", content=task.prompt),
                Message(role="assistant", content=reply.text),
            ],
            usage=reply.usage,
            cost_usd=reply.cost_usd,
            outcome=Outcome(success=reply.status == "success", num_turns=1),
            provenance=Provenance(source="executor", executor=self.name, model="scripted"),
        )
        return WorkerResult(
            task_id=task.id,
            executor=self.name,
            status=reply.status,
            reason=reply.reason,
            trace=trace,
            final_text=reply.text,
        )

    def plugin(self, name: str = "scripted") -> Any:
        """A plugin object registering this executor as `name`."""
        executor = self

        class _Plugin:
            @hookimpl
            def register_executors(self, register: Any) -> None:
                register(name, executor)

        return _Plugin()
