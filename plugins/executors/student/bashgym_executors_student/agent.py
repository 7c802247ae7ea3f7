"""The student loop: ask the model, run the tool calls it makes, until it answers without one.

As small as mini-swe-agent's agent class and as linear: one history, one model call per turn,
every tool call executed through the task's environment and answered with a tool result. The
history is the Trace (system prompt and tool schemas included). The model is the kernel's
(`Model.acomplete`, charged to the task as the kernel's `Charged` does), so usage and cost are
charged per call and the run's budget stops the loop at its cap with the Trace kept. Each call
is retried on transient failures, every failed try counted in the run's `failed_requests`; a
model that repeats itself is stopped (`repetition`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bashgym.contracts import Charged, Completion, TaskContext
from bashgym.events import TaskOutput, UsageCharged
from bashgym.records import (
    Message,
    Outcome,
    Provenance,
    Status,
    Task,
    ToolCall,
    Trace,
    Usage,
    WorkerResult,
)
from bashgym_executors_student import repetition, tools
from bashgym_executors_student.options import StudentOptions


@dataclass(frozen=True)
class Ending:
    status: Status
    reason: str | None = None
    error_kind: str | None = None


class StudentAgent:
    def __init__(self, task: Task, options: StudentOptions, ctx: TaskContext) -> None:
        self.task, self.options, self.ctx = task, options, ctx
        # ctx.model(alias), with each charge also counted in the Trace: a charge past the
        # budget raises before the answer comes back, and the Trace must count it all the same
        # (may start the embedded server)
        self.model = Charged(ctx.models.resolve(options.model_alias), self.charged)
        self.system = options.system_prompt or ""
        self.tools = tools.schemas()
        self.messages = [Message(role="user", content=task.prompt)]
        self.usage, self.costs, self.turns = Usage(), list[float | None](), 0
        self.from_text = 0  # tool calls read from a reply's text (`text_tool_calls`)

    async def run(self) -> Ending:
        limit = self.options.max_turns
        while self.turns < limit:
            reply = await self.query()
            looping = repetition.within_reply(reply, self.options.repeat_limit) or (
                repetition.across_turns(self.messages, self.options.repeat_limit)
            )
            if looping:
                return Ending(
                    "failed", f"model {self.model.alias} repeated {looping}", "repetition"
                )
            if not reply.tool_calls:
                return Ending("success")
            for call in reply.tool_calls:
                await self.execute(call)
        return Ending("failed", f"maximum number of turns ({limit}) reached", "max_turns")

    async def query(self) -> Message:
        self.turns += 1
        options = self.options
        overrides = {"temperature": options.temperature, "max_tokens": options.max_tokens}
        params = {k: v for k, v in overrides.items() if v is not None}
        history = [{"role": "system", "content": self.system}]
        history += [m.to_openai() for m in self.messages]
        done: Completion = await self.model.acomplete(
            history,
            tools=[t.to_openai() for t in self.tools],
            params={**params, "retry_wait_s": options.retry_wait_s},
            retries=options.model_retries,
            remaining_s=self.ctx.remaining_s,
            on_failure=self.failed_try,
        )
        answer = done.message
        calls = [
            ToolCall(
                id=call.get("id") or f"call_{self.turns}_{i}",
                name=call["function"].get("name") or "",
                arguments=call["function"].get("arguments") or "{}",
            )
            for i, call in enumerate(answer.get("tool_calls") or [])
        ]
        content = answer.get("content") or ""
        if not calls and options.text_tool_calls and (written := tools.calls_in_text(content)):
            calls = [
                ToolCall(id=f"call_{self.turns}_{i}", name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(written)
            ]
            content, self.from_text = "", self.from_text + len(calls)  # recorded as the calls
        reply = Message(role="assistant", content=content, tool_calls=calls)
        self.messages.append(reply)
        for note in ([reply.content[:160]] if reply.content else []) + [
            f"→ {c.name} {c.arguments[:120]}" for c in calls
        ]:
            self.ctx.emit(TaskOutput(task_id=self.task.id, text=" ".join(note.split())))
        return reply

    def failed_try(self, exc: BaseException) -> None:
        """A try that got no usable answer (refused, timed out, 429, 5xx, malformed): counted
        in the run's `failed_requests` for the alias, with no tokens."""
        self.ctx.emit(
            UsageCharged(
                model=self.model.model, alias=self.model.alias, task_id=self.task.id,
                requests=0, failed_requests=1,
            )
        )  # fmt: skip

    async def execute(self, call: ToolCall) -> None:
        left = self.ctx.remaining_s()
        limit = (
            self.options.command_timeout_s
            if left is None
            else min(self.options.command_timeout_s, left)
        )
        text, is_error = await tools.call(
            call.name, call.arguments, self.ctx.env, command_timeout=limit
        )
        self.messages.append(
            Message(
                role="tool", tool_call_id=call.id, name=call.name, is_error=is_error,
                content=tools.clip(text, self.options.output_limit),
            )
        )  # fmt: skip

    def charged(self, usage: Usage, cost_usd: float | None, **where: Any) -> None:
        """One answer's tokens and cost (the model's own price; a served model's is 0): kept
        for the Trace, then charged to the task and its budget, once (`TaskContext.charge`)."""
        self.usage, self.costs = self.usage + usage, [*self.costs, cost_usd]
        self.ctx.charge(usage, cost_usd, **where)

    def result(self, ending: Ending) -> WorkerResult:
        finals = [m.content for m in self.messages if m.role == "assistant" and m.content]
        trace = Trace(
            id=self.task.id,
            system_prompt=self.system,
            messages=self.messages,
            tools=self.tools,
            usage=self.usage,
            cost_usd=None if None in self.costs else sum(c or 0.0 for c in self.costs),
            outcome=Outcome(
                success=ending.status == "success",
                error_kind=ending.error_kind,
                error_message=ending.reason,
                num_turns=self.turns,
            ),
            provenance=Provenance(
                source="executor",
                executor="student",
                agent="bashgym-student",
                model=self.model.model,
                cwd=str(self.ctx.workspace),
            ),
            extra={"tool_calls_from_text": self.from_text} if self.from_text else {},
        )
        return WorkerResult(
            task_id=self.task.id, executor="student", status=ending.status,
            reason=ending.reason, trace=trace, final_text=finals[-1] if finals else "",
        )  # fmt: skip
