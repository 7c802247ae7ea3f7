"""Triangulating questions: a gold run and N consistency runs each, resumable per question.

Per question: the gold run first (the template's code, or the teacher with the hint); when it
submits, N runs of the teacher without the hint, at a sampling temperature, in parallel; then
`matching.triangulate`. A gold run that submits nothing ends the question (there is nothing to
verify against, so the N runs would be spent for nothing). The SFT conversation of a verified
question is, by default, the shortest hint-free run that reached the gold answer: it shows
what a model can do without the hint, and its answer is verified.

Each question is a run-store item (namespace `csv-triangulation`, key: a hash of the CSV and
the question), claimed, worked and completed with its finished row: a resumed run redoes only
the questions that were not done, and never charges a model twice for one. Questions run
`concurrency` at a time; episodes hold a warm worker each, so at most `sandbox.workers` run at
once, whatever the concurrency.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from bashgym.events import RowsGenerated, StepFinished, StepStarted
from bashgym.text import one_line
from bashgym_pipelines_csv_triangulation.agent import EpisodeTrace, Teacher, run_code, run_episode
from bashgym_pipelines_csv_triangulation.matching import triangulate, values_match
from bashgym_pipelines_csv_triangulation.prompts import system_prompt, user_prompt

if TYPE_CHECKING:
    from bashgym.contracts import RunContext
    from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
    from bashgym_pipelines_csv_triangulation.pool import SandboxPool
    from bashgym_pipelines_csv_triangulation.profile import Profile

NAMESPACE = "csv-triangulation"
STEP = "csv-triangulation episodes"
T = TypeVar("T")


def question_key(question: dict[str, Any], csv_sha256: str) -> str:
    fields = ("question", "answer_format", "hint", "answer_type", "code")
    text = json.dumps([csv_sha256, *(question.get(f) for f in fields)], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Triangulator:
    """Everything a question's episodes need, shared by all questions of a run."""

    options: CsvTriangulationOptions
    profile: Profile
    pool: SandboxPool
    gold_teacher: Teacher
    teacher: Teacher

    @property
    def system(self) -> str:
        return system_prompt(self.profile.name, self.profile.rows, self.profile.text())

    async def gold(self, q: dict[str, Any]) -> EpisodeTrace:
        user = user_prompt(q["question"], q["answer_format"], q["hint"])
        async with self.pool.episode() as sandbox:
            if q.get("code"):
                trace = EpisodeTrace(role="gold", hint=True, teacher="template")
                return await run_code(sandbox, trace, system=self.system, user=user, code=q["code"])
            trace = EpisodeTrace(role="gold", hint=True, teacher=self.gold_teacher.alias)
            return await run_episode(
                self.gold_teacher, sandbox, trace, system=self.system, user=user,
                max_turns=self.options.max_turns,
            )  # fmt: skip

    async def consistency(self, q: dict[str, Any], index: int) -> EpisodeTrace:
        user = user_prompt(q["question"], q["answer_format"], None)
        trace = EpisodeTrace(role="consistency", index=index, teacher=self.teacher.alias)
        async with self.pool.episode() as sandbox:
            return await run_episode(
                self.teacher, sandbox, trace, system=self.system, user=user,
                max_turns=self.options.max_turns,
            )  # fmt: skip

    async def question(self, q: dict[str, Any]) -> dict[str, Any]:
        """The finished row of one question (see `row`)."""
        started = time.perf_counter()
        gold = await self.gold(q)
        runs: list[EpisodeTrace] = []
        if gold.submitted:
            n = self.options.consistency_runs
            runs = list(await asyncio.gather(*(self.consistency(q, i) for i in range(n))))
        return self.row(q, gold, runs, time.perf_counter() - started)

    def row(
        self, q: dict[str, Any], gold: EpisodeTrace, runs: list[EpisodeTrace], seconds: float
    ) -> dict[str, Any]:
        options = self.options
        answers = [(r.submitted, r.answer) for r in runs]
        verdict = triangulate(
            (gold.submitted, gold.answer),
            answers if runs else [(False, None)] * options.consistency_runs,
            options.match,
            p_value=q.get("answer_type") == "p_value",
        )
        detail = verdict.detail
        if not gold.submitted:
            detail = f"{verdict.reason}: {gold.error or 'no submit()'}"
        messages = None
        if verdict.verified:
            messages = sft_messages(q, gold, runs, verdict.agreeing, options)
        every = [gold, *runs]
        return {
            "question_id": q["key"],
            "kind": q.get("kind"),
            "source": q.get("source"),
            "question": q["question"],
            "answer_format": q["answer_format"],
            "hint": q["hint"],
            "answer_type": q.get("answer_type"),
            "code": q.get("code"),
            "csv": self.profile.name,
            "csv_sha256": self.profile.sha256,
            "verified": verdict.verified,
            "verdict": detail,
            "agreement": verdict.agreement,
            "gold_submitted": gold.submitted,
            "gold_answer": _json(gold.answer if gold.submitted else None),
            "majority_answer": _json(verdict.majority),
            "consistency_answers": _json(
                [{"submitted": ok, "answer": value} for ok, value in answers]
            ),
            "gold_trace": gold.model_dump_json(),
            "consistency_traces": _json([r.model_dump(mode="json") for r in runs]),
            "messages": messages,
            "match": options.match.model_dump_json(),
            "duration_s": round(seconds, 4),
            "episode_s": [round(t.duration_s, 4) for t in every],
            "input_tokens": sum(t.input_tokens for t in every),
            "output_tokens": sum(t.output_tokens for t in every),
        }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def sft_messages(
    q: dict[str, Any],
    gold: EpisodeTrace,
    runs: list[EpisodeTrace],
    agreeing: list[int],
    options: CsvTriangulationOptions,
) -> list[dict[str, str]] | None:
    """The conversation to train on, without the hint (see the module docstring)."""
    p_value = q.get("answer_type") == "p_value"
    if options.sft_from == "consistency":
        fitting = [
            runs[i] for i in agreeing
            if values_match(runs[i].answer, gold.answer, options.match, p_value=p_value)
        ]  # fmt: skip
        if fitting:
            best = min(fitting, key=lambda r: (r.no_code, r.turns, r.index))  # cleanest
            return [dict(m) for m in best.messages]
    messages = [dict(m) for m in gold.messages]
    messages[1]["content"] = user_prompt(q["question"], q["answer_format"], None)
    return messages


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to the end from sync code, in a fresh thread when a loop already runs here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as executor:
        return executor.submit(asyncio.run, coro).result()


async def work_questions(
    run: RunContext, questions: dict[str, dict[str, Any]], make: Any, concurrency: int
) -> None:
    """Work each question of `questions` that is not done yet, `concurrency` at a time, through
    the run store; `make()` is an async context manager giving the Triangulator, entered only
    when there is work (a resumed run with every question done starts no sandbox).

    Why not `bashgym_work_tasks.work_through`: it claims any pending item of the namespace, and an
    interrupted earlier attempt may have left questions this attempt no longer asks (its
    DataDesigner batch was regenerated); only this call's keys are claimed here.
    """
    store = run.store
    store.add(NAMESPACE, list(questions.items()))
    todo = [k for k in questions if (item := store.get(NAMESPACE, k)) and item.state != "done"]
    if not todo:
        return
    run.emit(StepStarted(step=STEP, total=len(todo)))
    started, ok = time.perf_counter(), False
    try:
        async with make() as triangulator:

            async def lane() -> None:
                while todo:
                    key = todo.pop(0)
                    item = store.claim(NAMESPACE, key)
                    if item is None:  # failed before, or held by a live process
                        continue
                    try:
                        result = await triangulator.question({**item.payload, "key": key})
                    except Exception as exc:  # noqa: BLE001 -- recorded on the item
                        store.fail(NAMESPACE, key, one_line(exc))
                    else:
                        store.complete(NAMESPACE, key, result)
                    run.emit(RowsGenerated(step=STEP, n=1))

            await asyncio.gather(*(lane() for _ in range(max(concurrency, 1))))
        ok = True
    finally:
        run.emit(StepFinished(step=STEP, duration_s=time.perf_counter() - started, ok=ok))


def results(
    run: RunContext, questions: dict[str, dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The finished rows of `questions`, in their order, and the reason (by key) of each
    question whose work failed: it is dropped with the failure as its reason."""
    rows, failed = [], {}
    for key in questions:
        item = run.store.get(NAMESPACE, key)
        if item is not None and item.state == "done" and isinstance(item.result, dict):
            rows.append(item.result)
        else:
            error = (item.error if item is not None else None) or "not finished"
            failed[key] = f"question failed: {error}"
            run.drop(f"csv-triangulation: {failed[key]}", row_id=key)
    return rows, failed
