"""csv-triangulation: verified CSV-analysis episodes by teacher triangulation.

How it splits over the kernel's pipeline contract, and why:
- `build()` makes the *questions*, because that is what DataDesigner is good at: one row per
  question, resumable in batches, every unparseable model answer counted. In `llm` mode a
  structured column (`proposal`: question, answer format, hint, answer type) is written by the
  model from the CSV's profile, each row steered to a kind and a column; in `templates` mode
  the seed rows are template questions whose gold code needs no model, and a text column
  rewords them with the model (or an expression keeps the template's words).
- `finalize()` runs the *episodes*, because they are not columns: each is a multi-turn loop
  (code -> sandboxed output -> code ... -> submit) of variable length through the teacher
  alias (`run.model(alias)`), with sandboxed execution between turns. Per question, one gold
  run (the template's code, or the teacher with the hint) and N hint-free runs execute in a pool of
  warm sandbox workers (`pool`, `worker`), are triangulated (`matching`), and become one row:
  the question, hint, verified flag and why, every trace with its timing, and for verified
  questions the SFT conversation (`messages`, read by the nemo-jsonl sink as chat). Questions
  are run-store items, so a resumed run redoes only the unfinished ones (`episodes`).
- the `triangulation` judge then keeps the verified rows, dropping the others with the reason.

Every row, verified or not, is also written to RUN_DIR/csv-triangulation/episodes.jsonl,
scrubbed, since the judge keeps only the verified ones for the sinks.

Top-up rounds (`--top-up`: rounds until `num_records` rows pass the judge) call `build()` again
with no round number, and template questions are deterministic, so the pipeline remembers, per
run directory and in this process, the questions it has finalized: a later round's seed rows
start after them, and a question asked again is dropped with a reason instead of being kept
twice. A resumed run starts that memory empty and rebuilds it round by round, as the first
attempt did, so its rounds see the same seed rows.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.models import model_config

from bashgym.contracts import Generated, InputError, Pipeline, RunContext
from bashgym.events import Artifact
from bashgym.records import DroppedRow
from bashgym.text import plain
from bashgym_pipelines_csv_triangulation import episodes as ep
from bashgym_pipelines_csv_triangulation.agent import Teacher
from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
from bashgym_pipelines_csv_triangulation.profile import Profile, profile, read_csv
from bashgym_pipelines_csv_triangulation.prompts import PROPOSE, VERBALIZE, ProposedQuestion
from bashgym_pipelines_csv_triangulation.questions import (
    NAME,
    PROPOSAL,
    llm_seed_rows,
    read_generated,
    template_seed_rows,
)
from bashgym_pipelines_csv_triangulation.sandbox import choose, make_pool, registry_of

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_QUESTIONS = 10
MAX_TEMPLATES = 500  # template candidates offered to DataDesigner; it takes num_records of them
EPISODES = "episodes.jsonl"
COLUMNS = [
    "question_id", "kind", "source", "question", "answer_format", "hint", "answer_type", "code",
    "csv", "csv_sha256", "verified", "verdict", "agreement", "gold_submitted", "gold_answer",
    "majority_answer", "consistency_answers", "gold_trace", "consistency_traces", "messages",
    "match", "duration_s", "episode_s", "input_tokens", "output_tokens",
]  # fmt: skip


def csv_path(options: CsvTriangulationOptions) -> Path:
    return Path(options.csv).expanduser().resolve()


def load_profile(options: CsvTriangulationOptions) -> Profile:
    path = csv_path(options)
    return profile(path, read_csv(path), options.sample_rows)


class CsvTriangulationPipeline(Pipeline[CsvTriangulationOptions]):
    """Verified CSV-analysis episodes: sandboxed teacher runs, kept when a gold run with the
    hint agrees with the majority of N runs without it."""

    runner = "datadesigner"
    output_format = "chat"
    uses_environments = True  # its teachers' code runs in one: a run loads them (bashgym_cli)

    def __init__(self) -> None:
        self._asked: dict[str, set[str]] = {}  # run dir -> question keys finalized (top-up)

    def build(
        self, options: CsvTriangulationOptions, run: RunContext, seed: pd.DataFrame | None
    ) -> Any:
        # ~0.5 s (measured): pandas only when rows are made, not whenever the registry loads
        import pandas as pd

        if seed is not None and len(seed):
            raise InputError(
                f"{NAME} asks its own questions about pipeline.csv and takes no source rows"
            )
        assert run.models is not None, "the engine opens a ModelSession for every run"
        prof = load_profile(options)
        n = options.num_records or DEFAULT_QUESTIONS
        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve(options.question_model))]
        )
        offset = len(self._asked.get(str(run.run_dir), ()))  # questions of earlier rounds
        if options.questions == "llm":
            rows = llm_seed_rows(prof, options.kinds, n + offset, run.seed)[offset:]
        else:
            rows = template_seed_rows(prof, options.kinds, MAX_TEMPLATES, run.seed)
            rows = rows[offset:] + rows[:offset]
            if not rows:
                raise InputError(
                    f"{NAME}: no {'/'.join(options.kinds)} template fits {prof.name}: it needs "
                    "numeric or categorical columns"
                )
        builder.with_seed_dataset(
            dd.DataFrameSeedSource(df=pd.DataFrame(rows)),
            sampling_strategy=dd.SamplingStrategy.ORDERED,
        )
        if options.questions == "llm":
            builder.add_column(
                dd.LLMStructuredColumnConfig(
                    name=PROPOSAL,
                    prompt=PROPOSE,
                    model_alias=options.question_model,
                    output_format=ProposedQuestion,
                )
            )
        elif options.verbalize:
            builder.add_column(
                dd.LLMTextColumnConfig(
                    name="question", prompt=VERBALIZE, model_alias=options.question_model
                )
            )
        else:
            builder.add_column(
                dd.ExpressionColumnConfig(name="question", expr="{{ template_question }}")
            )
        return builder

    def finalize(
        self, dataset: pd.DataFrame, options: CsvTriangulationOptions, run: RunContext
    ) -> Generated:
        """The episodes' rows; each question row dropped (unusable, repeated, failed) is handed
        back whole, as DataDesigner left it, with its reason (dropped.jsonl)."""
        import pandas as pd  # (see build)

        prof = load_profile(options)
        columns = [c.name for c in prof.columns]
        read = read_generated(dataset, options, run, prof.sha256, columns)
        questions, dropped = read.questions, read.dropped
        asked = self._asked.setdefault(str(run.run_dir), set())
        for key in [k for k in questions if k in asked]:
            run.drop(f"{NAME}: asked in an earlier round", row_id=key)
            dropped.append(
                DroppedRow(f"pipeline {NAME}", "asked in an earlier round", read.rows[key])
            )
            del questions[key]
        asked.update(questions)
        if questions:
            teachers = make_teachers(options, run)
            ep.run_async(
                ep.work_questions(
                    run,
                    questions,
                    lambda: triangulator(options, run, prof, teachers),
                    options.concurrency,
                )
            )
        rows, failed = ep.results(run, questions)
        dropped += [DroppedRow(f"pipeline {NAME}", why, read.rows[k]) for k, why in failed.items()]
        frame = pd.DataFrame(rows, columns=COLUMNS)
        run.count(f"{NAME}.verified", int(frame["verified"].sum()) if len(frame) else 0)
        if options.episodes_file:
            write_episodes(run)
        return Generated(frame, dropped)


def make_teachers(options: CsvTriangulationOptions, run: RunContext) -> tuple[Teacher, Teacher]:
    """The gold and the consistency teacher: one alias at two temperatures. Resolving it here,
    before any event loop, lets a local model runtime start (a blocking call) first."""
    model = run.model(options.model)

    def make(temperature: float | None) -> Teacher:
        params: dict[str, Any] = {}
        if temperature is not None:
            params["temperature"] = temperature
        if options.max_tokens is not None:
            params["max_tokens"] = options.max_tokens
        return Teacher(options.model, model, params)

    return make(options.gold_temperature), make(options.temperature)


@asynccontextmanager
async def triangulator(
    options: CsvTriangulationOptions,
    run: RunContext,
    prof: Profile,
    teachers: tuple[Teacher, Teacher],
) -> Any:
    """The sandbox pool (started only when there are questions to work) and the teachers."""
    chosen = choose(registry_of(run), options.sandbox)
    if chosen.note:
        run.note(chosen.note)
    root = run.run_dir / NAME / "sandbox"
    pool = make_pool(chosen, options.sandbox, root, csv_path(options))
    gold, teacher = teachers
    async with pool:
        try:
            yield ep.Triangulator(options, prof, pool, gold, teacher)
        finally:
            if pool.restarts:
                run.count(f"{NAME}.worker_restarts", pool.restarts)


def write_episodes(run: RunContext) -> Path:
    """Every finished question of the run, verified or not, scrubbed, as JSON lines."""
    import pandas as pd  # (see CsvTriangulationPipeline.build)

    rows = [i.result for i in run.store.items(ep.NAMESPACE, "done") if isinstance(i.result, dict)]
    nested = ("gold_answer", "majority_answer", "consistency_answers", "gold_trace",
              "consistency_traces", "match")  # fmt: skip
    for row in rows:
        for column in nested:
            if isinstance(row.get(column), str):
                row[column] = json.loads(row[column])
    frame = run.scrub_frame(pd.DataFrame(rows))  # the run's scrubbing, as every row's
    folder = run.run_dir / NAME
    folder.mkdir(parents=True, exist_ok=True)
    path, tmp = folder / EPISODES, folder / f".{EPISODES}.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for record in frame.to_dict(orient="records"):
            fh.write(json.dumps(plain(record), ensure_ascii=False, default=str) + "\n")
    tmp.replace(path)
    run.emit(Artifact(name=f"{NAME} episodes", path=str(path)))
    return path
