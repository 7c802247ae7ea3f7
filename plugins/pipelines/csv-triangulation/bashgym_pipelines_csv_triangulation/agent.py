"""One teacher episode: code -> sandboxed output -> code ... -> submit, through a model alias.

The loop is deliberately plain (mini-swe-agent's shape: a linear message history, one action
per turn): each reply must hold a ```python block, or be nothing but Python (small models drop
the fence; such a reply is recorded fenced, and counted in the trace); the code runs in the
episode's sandbox namespace; what it printed goes back as the next user turn; the episode ends
when a cell calls `submit()`. A reply with no code is never parsed as a submission (an answer
in prose, a bare value, code that does not parse): as in mini-swe-agent, the model is told the
format again (`FORMAT`) and the reply uses up its turn, counted in the trace (`no_code`); an
episode whose last reply still held no code ends as a protocol violation. A run that computed
its answer but did not submit it is told how (`OUTPUT`'s reminder). Running out of turns, or a
cell that breaks the protocol (two submissions), ends it too. Small models need the second
chance: in one run of the shipped example on the embedded 0.5B model, 6 of 20 runs ended on a
reply without code (a bare `1197.3`, code with one parenthesis too many) and 7 ran out of turns,
most of them after printing the right value.

Model calls go through the run's model (`run.model(alias).acomplete`, the alias's own settings
with the teacher's params over them), which charges every answer's tokens to the run; they are
counted per episode in its trace too. A failed model call ends the episode with the error as its
reason; it does not stop the run.
"""

from __future__ import annotations

import ast
import re
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field

from bashgym.contracts import Model
from bashgym.records import Usage
from bashgym.text import one_line
from bashgym_pipelines_csv_triangulation.pool import CellResult, EpisodeHandle
from bashgym_pipelines_csv_triangulation.prompts import FORMAT, ONLY_FIRST, OUTPUT

CODE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class Cell(BaseModel):
    """One code cell of an episode, for the trace's timing and outcome."""

    turn: int
    status: str
    wall_s: float
    cpu_s: float | None = None
    submitted: bool = False
    error: str | None = None


class EpisodeTrace(BaseModel):
    """One run of a question: the conversation, its answer and where the time went."""

    role: str  # gold or consistency
    index: int = 0
    hint: bool = False
    teacher: str  # the model alias, or "template" for a template's gold code
    messages: list[dict[str, str]] = Field(default_factory=list)
    submitted: bool = False
    answer: Any = None
    answer_type: str | None = None
    error: str | None = None
    turns: int = 0
    cells: list[Cell] = Field(default_factory=list)
    hooks: list[dict[str, Any]] = Field(default_factory=list)
    duration_s: float = 0.0
    model_s: float = 0.0
    sandbox_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    unfenced: int = 0  # replies that were bare code, without the ```python fence
    no_code: int = 0  # replies with no code at all, each answered with FORMAT

    def record(self, turn: int, result: CellResult) -> None:
        self.cells.append(
            Cell(
                turn=turn,
                status=result.status,
                wall_s=result.wall_s,
                cpu_s=result.cpu_s,
                submitted=result.submitted,
                error=last_line(result.error),
            )
        )
        self.sandbox_s = round(self.sandbox_s + result.wall_s, 4)
        self.hooks += result.hooks
        if result.submitted:
            self.submitted, self.answer, self.answer_type = True, result.answer, result.answer_type


def last_line(text: str | None) -> str | None:
    """The last non-blank line of an error (a traceback's exception line), cut to 300."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else None


def bare_code(text: str) -> str | None:
    """A reply that is Python and nothing else, written without the fence (small models do
    that), or None. A bare value (`42`, `answer`) is no code: it is an answer in words."""
    text = (text or "").strip()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    plain = (ast.Constant, ast.Name)
    if not tree.body or all(
        isinstance(node, ast.Expr) and isinstance(node.value, plain) for node in tree.body
    ):
        return None
    return text


def first_code(text: str) -> tuple[str | None, bool]:
    """The first python block of a reply (or the reply itself when it is bare code), and
    whether the reply held more blocks."""
    blocks = CODE.findall(text or "")
    if blocks:
        return blocks[0], len(blocks) > 1
    return bare_code(text), False


@dataclass
class Teacher:
    """A model alias at the teacher's params; `model` is the run's (`run.model(alias)`), which
    charges what each answer spends to the run."""

    alias: str
    model: Model
    params: dict[str, Any] = field(default_factory=dict)  # over the alias's (temperature, ...)

    async def reply(self, messages: list[dict[str, str]]) -> tuple[str, Usage]:
        # No semaphore: an episode makes one call at a time and holds a warm worker while it
        # runs, so calls in flight never outnumber `sandbox.workers`.
        done = await self.model.acomplete(list(messages), params=dict(self.params))
        return str(done.message.get("content") or ""), done.usage


async def run_episode(
    teacher: Teacher,
    sandbox: EpisodeHandle,
    trace: EpisodeTrace,
    *,
    system: str,
    user: str,
    max_turns: int,
) -> EpisodeTrace:
    """Play one episode into `trace` (see the module docstring); never raises for a failure."""
    started = time.perf_counter()
    trace.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    try:
        await _loop(teacher, sandbox, trace, max_turns)
    finally:
        trace.duration_s = round(time.perf_counter() - started, 4)
    return trace


async def _loop(
    teacher: Teacher, sandbox: EpisodeHandle, trace: EpisodeTrace, max_turns: int
) -> None:
    for turn in range(1, max_turns + 1):
        asked = time.perf_counter()
        try:
            text, tokens = await teacher.reply(trace.messages)
        except Exception as exc:  # noqa: BLE001 -- the episode fails with the reason
            trace.error = f"model call failed: {one_line(exc)}"
            return
        finally:
            trace.model_s = round(trace.model_s + time.perf_counter() - asked, 4)
        trace.input_tokens += tokens.input_tokens
        trace.output_tokens += tokens.output_tokens
        trace.turns = turn
        code, more = first_code(text)
        if code is not None and not CODE.search(text):
            trace.unfenced += 1  # recorded fenced, so every trace has one shape
            text = f"```python\n{code}\n```"
        trace.messages.append({"role": "assistant", "content": text})
        if code is None:
            trace.no_code += 1
            if turn == max_turns:
                trace.error = "protocol violation: a reply without code and no submit()"
                return
            trace.messages.append({"role": "user", "content": FORMAT})
            continue
        result = await sandbox.run(code)
        trace.record(turn, result)
        if result.status == "protocol":
            trace.error = f"protocol violation: {result.error}"
            return
        if result.submitted:
            return
        shown = result.shown() + (f"\n{ONLY_FIRST}" if more else "")
        trace.messages.append({"role": "user", "content": OUTPUT.format(output=shown)})
    trace.error = f"no submit() within {max_turns} turns"


async def run_code(
    sandbox: EpisodeHandle, trace: EpisodeTrace, *, system: str, user: str, code: str
) -> EpisodeTrace:
    """A template's gold run: its code, one cell, recorded as an episode of one turn."""
    started = time.perf_counter()
    trace.messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": user},
        {"role": "assistant", "content": f"```python\n{code}\n```"},
    ]
    result = await sandbox.run(code)
    trace.turns = 1
    trace.record(1, result)
    if result.status == "ok" and not result.submitted:
        trace.error = "protocol violation: the code ran without calling submit()"
    elif not result.submitted:
        trace.error = f"{result.status}: {last_line(result.error)}"
    trace.duration_s = round(time.perf_counter() - started, 4)
    return trace
