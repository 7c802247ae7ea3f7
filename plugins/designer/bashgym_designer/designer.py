"""The one place BashGym drives NeMo DataDesigner: environment, logging and `create()`.

DataDesigner reads `DATA_DESIGNER_HOME` and `NEMO_TELEMETRY_ENABLED` once, at import time, so
they are set here before its first import (shared/reference/datadesigner.md): otherwise it writes
into `~/.data-designer` and posts usage events. Its INFO logging (and this library's) goes to the
run's log file, redacted, so the terminal shows BashGym's progress bar instead of hundreds of
lines.

Imports: `data_designer.config` is imported at module level (it loads nothing until a name is
used, in a function); DataDesigner's engine and interface read those env vars when imported, so
they are imported inside the functions, which run after `prepare_environment`. pandas and
pyarrow are too: importing them costs ~0.5 s and ~0.15 s, which every command that loads the
plugins would pay.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import data_designer.config as dd

from bashgym.records import DroppedRow
from bashgym_designer import transport
from bashgym_designer.drops import read_drops
from bashgym_designer.failures import (
    FAILURES_DIR,
    RawAnswers,
    persist,
    row_group_of,
)
from bashgym_designer.failures import load as load_failures
from bashgym_designer.faults import guarded
from bashgym_designer.seeding import seeded_samplers
from bashgym_designer.settings import designer_settings

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.settings import Settings

# DataDesigner needs at least one provider even for configs with no LLM column. This one is never
# called: port 9 is the discard port and health checks are skipped for configs without models.
PLACEHOLDER_PROVIDER = {
    "name": "bashgym-no-model",
    "endpoint": "http://127.0.0.1:9/v1",
    "provider_type": "openai",
    "api_key": "BASHGYM_NO_MODEL_KEY",
}


def prepare_environment(settings: Settings) -> None:
    """Set DataDesigner's import-time env vars (unless the user set them) before importing it."""
    os.environ.setdefault("DATA_DESIGNER_HOME", str(settings.cache_dir / "data-designer"))
    os.environ.setdefault("NEMO_TELEMETRY_ENABLED", "true" if settings.telemetry else "false")
    offline_tokenizer()


# tiktoken's cache file for cl100k_base: the sha1 of its download URL (tiktoken/load.py).
CL100K_CACHE_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"


def offline_tokenizer() -> None:
    """Keep DataDesigner's token counting off the network.

    Its profiler counts prompt and output tokens with tiktoken's `cl100k_base`, which tiktoken
    downloads on first use unless `TIKTOKEN_CACHE_DIR` holds it: offline, every run stalls on
    that attempt and logs warnings. litellm (a kernel dependency) ships exactly that file, so
    tiktoken is pointed at it: exact counts, no download. A user's own cache dir wins. Should a
    litellm release stop shipping it, DataDesigner's tokenizer getter is replaced with a
    ~4-characters-a-token estimate rather than let it download.
    """
    if os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR"):
        return
    bundled = _bundled_tiktoken_dir()
    if bundled is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
        return
    from data_designer.engine.utils import token_counting  # engine: see the docstring

    token_counting.get_cl100k_base_tokenizer = ApproximateTokenizer


def _bundled_tiktoken_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # finds the folder without importing litellm
    for folder in (spec.submodule_search_locations or []) if spec else []:
        tokenizers = Path(folder) / "litellm_core_utils" / "tokenizers"
        if (tokenizers / CL100K_CACHE_FILE).is_file():
            return tokenizers
    return None


class ApproximateTokenizer:
    """Stands in for a tiktoken Encoding where only the token count is used."""

    def encode(self, text: str, **_: Any) -> list[int]:
        return [0] * -(-len(text) // 4)


def seed_frame(df: pd.DataFrame) -> Any:
    return dd.DataFrameSeedSource(df=df)


@dataclass
class Generation:
    """What one `create()` produced, and an account of every requested row it did not."""

    dataset: pd.DataFrame
    requested: int
    artifact_dir: Path
    resumed_rows: int = 0  # rows kept from an interrupted earlier attempt
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)  # (column, reason)
    dropped: list[DroppedRow] = field(default_factory=list)  # rows processors dropped
    failed_rows: list[DroppedRow] = field(default_factory=list)  # cells that never generated
    failed_requests: dict[str, tuple[str, int]] = field(default_factory=dict)  # per alias
    notes: list[str] = field(default_factory=list)
    # Why create() was stopped before it finished (its model stopped answering): `dataset`
    # then holds the finished batches only, and `unexplained` counts the rows still pending.
    stopped: str | None = None

    @property
    def unexplained(self) -> int:
        """Requested rows that neither came out nor have a recorded reason."""
        explained = len(self.dataset) + len(self.dropped) + sum(self.failures.values())
        return max(self.requested - explained, 0)


# The loggers whose records go to the run's log file: DataDesigner's, and this library's (the
# filter and validation processors run inside `create()`; a filter's warning quotes its rule).
RUN_LOGGERS = ("data_designer", "bashgym_designer")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _unchanged(text: str) -> str:
    return text


class RedactingFormatter(logging.Formatter):
    """Formats a record, then redacts the whole line (message, arguments and traceback alike):
    a keep rule, a model's answer or a prompt quoted in a warning is run data like any other,
    and no secret may reach a file in the run dir (README "Secret scrubbing")."""

    def __init__(self, redact: Callable[[str], str]) -> None:
        super().__init__(LOG_FORMAT)
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))


class RunLogHandler(logging.FileHandler):
    """The run's log file, attached to `RUN_LOGGERS`; closing it detaches it from all of them,
    so callers that remove it from DataDesigner's logger only (then close it) leave no handler
    behind that would reopen an old run's log."""

    def close(self) -> None:
        for name in RUN_LOGGERS:
            logging.getLogger(name).removeHandler(self)
        super().close()


def route_logs(log_file: Path, redact: Callable[[str], str] | None = None) -> logging.Handler:
    """Send DataDesigner's log and this library's to `log_file` (not the terminal), each line
    passed through `redact` (a run's `run.redact`); close the returned handler when done."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handler = RunLogHandler(log_file)
    handler.setFormatter(RedactingFormatter(redact or _unchanged))
    for name in RUN_LOGGERS:
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return handler


def run_config(settings: Settings) -> Any:
    """The RunConfig every BashGym `create()` uses (a resumed run must match the first)."""
    return dd.RunConfig(
        # No Prometheus port per run: runs and tests run side by side.
        otel_metrics_port=None,
        # Per-task outcomes (column, row, error) are how dropped rows get a column and reason:
        # DataDesigner otherwise only logs "Generated 6 of 9 requested records".
        async_trace=True,
        buffer_size=designer_settings(settings).buffer_size,
        max_concurrent_row_groups=designer_settings(settings).max_concurrent_row_groups,
        max_conversation_restarts=designer_settings(settings).max_conversation_restarts,
    )


class _NoProfiler:
    """Stands in for DataDesigner's dataset profiler (see `make_designer`)."""

    def profile_dataset(self, *_: Any, **__: Any) -> None:
        return None


def make_designer(
    run_dir: Path, providers: list[dd.ModelProvider] | None, settings: Settings
) -> Any:
    """A DataDesigner writing under `run_dir/datadesigner`, adapted in three narrow ways.

    Each is an override of one of its factory methods, because 0.9 offers no option for it:
    - it remembers the resource provider, the dataset builder and its task scheduler, which
      it makes inside `create()`: per-model token and request counts live on the first
      (DataDesigner only logs them), per-task outcomes on the second (needed even when
      `create()` raises because every row was dropped), and the third is how `cancel()`
      stops a `create()` whose model stopped answering (see `faults`);
    - it skips the column profiler: BashGym's report.html does that job, the profiler counts
      tokens of every cell (a large share of create()'s CPU at scale), and in 0.9.6 it raises
      on a one-row result with an LLM column (a standard deviation of one value).
    Should these methods change, usage is reported as unknown, never fatal.
    """
    from data_designer.interface import DataDesigner  # interface: see the docstring

    class _Designer(DataDesigner):  # type: ignore[misc]
        last_resources: Any = None
        last_builder: Any = None
        last_scheduler: Any = None
        raw_answers = RawAnswers()

        def cancel(self) -> None:
            """Stop the `create()` under way as DataDesigner's own Ctrl-C does: batches in
            flight are discarded (never checkpointed), so a resumed run makes them again."""
            if self.last_scheduler is not None:
                self.last_scheduler.request_cancel()

        def _create_resource_provider(self, *args: Any, **kwargs: Any) -> Any:
            self.last_resources = super()._create_resource_provider(*args, **kwargs)
            self.raw_answers.watch(self.last_resources)
            return self.last_resources

        def _create_dataset_builder(self, *args: Any, **kwargs: Any) -> Any:
            self.last_builder = built = super()._create_dataset_builder(*args, **kwargs)
            prepare = getattr(built, "_prepare_async_run", None)
            if prepare is not None:  # else a DataDesigner change: cancel() does nothing

                def remember(*a: Any, **k: Any) -> Any:
                    scheduler, buffers = prepare(*a, **k)
                    self.last_scheduler = scheduler
                    return scheduler, buffers

                built._prepare_async_run = remember
            return built

        def _create_dataset_profiler(self, *args: Any, **kwargs: Any) -> Any:
            return _NoProfiler()

    designer = _Designer(
        artifact_path=run_dir / "datadesigner",
        model_providers=providers or [dd.ModelProvider(**PLACEHOLDER_PROVIDER)],
        auto_configure_logging=False,
    )
    designer.set_run_config(run_config(settings))
    return designer


def failed_requests(designer: Any) -> dict[str, tuple[str, int]]:
    """Per alias of the designer's last `create()`: its model id and the requests that failed
    (tokens are counted live, per request, through DataDesigner's usage events)."""
    try:  # per alias: DataDesigner's own summary merges aliases that share a model id
        facades = designer.last_resources.model_registry.models
        return {
            str(alias): (str(f.model_name), int(f.usage_stats.request_usage.failed_requests))
            for alias, f in facades.items()
        }
    except Exception:  # noqa: BLE001 -- informative; a DataDesigner change must not fail a run
        return {}


_CAUSE = re.compile(r"Cause:\s*(.+)")
# (pattern searched in the error, reason): the first match names the kind of failure. Values
# that differ per row stay in dropped.jsonl; the reason is what rows have in common.
_KINDS = (
    (r"cut off because it reached max_tokens", "answer cut off at max_tokens"),
    (r"cut off because the model context window", "answer cut off by the context window"),
    (r"response_schema|doesn't match requested|validation errors? for", "schema mismatch"),
    (r"no parsable json", "unparseable answer (no JSON found)"),
    (r"could not be parsed|parsing", "unparseable answer"),
    (r"context length|context window|too long|maximum context", "prompt too long for the model"),
    (r"\b429\b|rate.?limit|insufficient credits or quota", "rate limited or out of quota (429)"),
    (r"time(d)? ?out|deadline", "timed out"),
    (
        r"connection (refused|error)|connect call failed|connection to model .* failed",
        "connection refused or lost",
    ),
    (r"\b(401|403)\b|unauthori[sz]ed|authentication", "unauthorized (401/403)"),
    (r"\b5\d\d\b|internal server error|bad gateway|service unavailable", "server error (5xx)"),
)
MAX_REASON = 100


def failure_reason(error: str | None) -> str:
    """The kind of a DataDesigner task failure (its text varies per row; the kind does not):
    a known kind, else the cause's first line, values masked, cut at a word."""
    text = error or "unknown error"
    for pattern, reason in _KINDS:
        if re.search(pattern, text, re.IGNORECASE):
            return reason
    cause = _CAUSE.search(text)
    line = (
        cause.group(1)
        if cause
        else next((ln.strip(" |-") for ln in text.splitlines() if ln.strip(" |-")), text)
    )
    line = re.sub(r"'[^']{0,80}'", "'…'", line)  # values differ per row; the reason should not
    if len(line) <= MAX_REASON:
        return line
    return line[: MAX_REASON - 1].rsplit(" ", 1)[0] + "…"


def task_failures(traces: list[Any]) -> Counter[tuple[str, str]]:
    """Rows whose cell for some column failed for good, counted by (column, reason).

    A task may fail and then succeed on a retry; only cells with no successful attempt count.
    Whole-batch tasks (no row index) are left to the caller's unexplained remainder.
    """
    outcome: dict[tuple[str, int, int], str | None] = {}
    for trace in traces:
        if trace.row_index is None or trace.status not in ("ok", "error"):
            continue
        key = (trace.column, trace.row_group, trace.row_index)
        if trace.status == "ok":
            outcome[key] = None
        elif outcome.get(key, "") is not None:
            outcome[key] = trace.error or "unknown error"
    per_row: dict[tuple[int, int], tuple[str, str]] = {}
    for (column, rg, row), error in sorted(outcome.items(), key=lambda kv: kv[0][1:]):
        if error is not None and (rg, row) not in per_row:  # the first column to fail drops it
            per_row[(rg, row)] = (column, failure_reason(error))
    return Counter(per_row.values())


def all_rows_dropped(designer: Any, requested: int, resumed: int) -> Generation | None:
    """An empty Generation when `create()` raised only because every row was dropped with a
    recorded reason (unparseable answers, timeouts, filters: DataDesigner refuses an empty
    dataset); None when the cause is the setup (a refused connection, a bad key or model id):
    that must fail the run with its message, not pass as a run that dropped every row."""
    import pandas as pd  # start-up: see the docstring

    built = designer.last_builder
    if built is None:
        return None
    artifact_dir = Path(built.artifact_storage.base_dataset_path)
    failures, failed_rows = load_failures(artifact_dir)
    dropped = read_drops(artifact_dir)
    config_error = not all(_ROW_LEVEL.search(reason) for _, reason in failures)
    generation = Generation(
        dataset=pd.DataFrame(),
        requested=requested,
        artifact_dir=artifact_dir,
        resumed_rows=resumed,
        failures=failures,
        dropped=dropped,
        failed_rows=failed_rows,
        failed_requests=failed_requests(designer),
    )
    if not config_error and (failures or dropped) and generation.unexplained == 0:
        return generation
    return None


# Failures that concern one row (its answer, its time) rather than the setup: when they drop
# every row the run reports that; any other cause (a refused connection, a bad key, a 400 for a
# malformed request) fails the run with its message.
_ROW_LEVEL = re.compile(
    r"^(unparseable answer|schema mismatch|answer cut off|prompt too long|rate limited|timed out)"
)


def _rows_on_disk(dataset_dir: Path) -> int:
    import pyarrow.parquet as pq  # start-up: see the docstring

    return sum(
        pq.ParquetFile(p).metadata.num_rows
        for p in sorted((dataset_dir / "parquet-files").glob("*.parquet"))
    )


def generate(
    builder: dd.DataDesignerConfigBuilder,
    *,
    num_records: int,
    run_dir: Path,
    settings: Settings,
    providers: list[dd.ModelProvider] | None = None,
    on_rows: Callable[[int], None] | None = None,
    on_usage: Callable[[str, str, int, int], None] | None = None,
    dataset_name: str = "dataset",
    resume: bool = False,
    seed: int | None = None,
    redact: Callable[[str], str] | None = None,
) -> Generation:
    """Run `create()` into `run_dir/datadesigner/<dataset_name>` and load the result.

    `resume=True` continues an interrupted attempt from its last finished batch (DataDesigner
    discards the batches that were in flight, so no row is duplicated or lost); otherwise any
    earlier attempt is cleared first. `on_rows(n)` is called after each finished batch with its
    row count (for progress bars), and once up front with the rows a resume keeps.
    `on_usage(alias, model, input_tokens, output_tokens)` is called for every answered request
    as it is answered (retries and answers that fail to parse included), so usage is true even
    for a run that is killed. `seed` makes the samplers repeat (see `seeding`). `redact` (the
    run's `run.redact`) is applied to what this library writes itself: the failure records and
    the log file (DataDesigner's own files are the runner's to scrub).
    """
    prepare_environment(settings)
    import pyarrow.parquet as pq  # start-up: see the docstring
    from data_designer.interface.errors import DataDesignerGenerationError  # see the docstring

    transport.install()  # one TLS context for all of DataDesigner's connection pools

    dataset_dir = run_dir / "datadesigner" / dataset_name
    resumed = 0
    if resume and dataset_dir.is_dir():
        resumed = _rows_on_disk(dataset_dir)
    elif dataset_dir.exists():
        shutil.rmtree(dataset_dir)
    if resumed and on_rows is not None:
        on_rows(resumed)
    redact = redact or _unchanged
    handler = route_logs(run_dir / "logs" / "datadesigner.log", redact)
    unsubscribe = _subscribe_usage(on_usage)
    try:
        designer = make_designer(run_dir, providers, settings)

        def batch_done(path: Path) -> None:
            record_failures(designer, row_group_of(Path(path)), redact=redact)
            if on_rows is not None:
                on_rows(pq.ParquetFile(path).metadata.num_rows)

        give_up, breaker = designer_settings(settings).rate_limit_give_up_s, None
        try:
            with seeded_samplers(seed), guarded(give_up, on_trip=designer.cancel) as breaker:
                results = designer.create(
                    builder,
                    num_records=num_records,
                    dataset_name=dataset_name,
                    on_batch_complete=batch_done,
                    resume=dd.ResumeMode.IF_POSSIBLE if resume else dd.ResumeMode.NEVER,
                )
        except Exception as exc:
            if breaker is not None and breaker.tripped:  # create() was cancelled (`faults`)
                return stopped(designer, dataset_dir, num_records, resumed, breaker)
            if not isinstance(exc, DataDesignerGenerationError):
                raise
            record_failures(designer, redact=redact)
            empty = all_rows_dropped(designer, num_records, resumed)
            if empty is None:
                raise
            empty.failed_requests = with_retries(empty.failed_requests, breaker.failed_requests())
            return empty
        record_failures(designer, redact=redact)
        artifact_dir = Path(results.artifact_storage.base_dataset_path)
        failures, failed_rows = load_failures(artifact_dir)
        return Generation(
            dataset=results.load_dataset(),
            requested=num_records,
            artifact_dir=artifact_dir,
            resumed_rows=resumed,
            failures=failures,
            dropped=read_drops(artifact_dir),
            failed_rows=failed_rows,
            failed_requests=with_retries(failed_requests(designer), breaker.failed_requests()),
            notes=[breaker.reason()] if breaker.tripped else [],  # tripped as it finished
        )
    finally:
        unsubscribe()
        handler.close()  # detaches it from every logger it was on


def stopped(
    designer: Any, dataset_dir: Path, requested: int, resumed: int, breaker: Any
) -> Generation:
    """What a `create()` cancelled by the breaker leaves: the finished batches (kept on disk
    with their drop reasons, as a resumed run keeps them) and, as `unexplained`, the rows
    still pending. The failures of batches in flight are not recorded: those batches were
    discarded and a resumed run makes them again."""
    import pandas as pd  # start-up: see the docstring

    files = sorted((dataset_dir / "parquet-files").glob("*.parquet"))
    dataset = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else None
    failures, failed_rows = load_failures(dataset_dir)
    return Generation(
        dataset=pd.DataFrame() if dataset is None else dataset,
        requested=requested,
        artifact_dir=dataset_dir,
        resumed_rows=resumed,
        failures=failures,
        dropped=read_drops(dataset_dir),
        failed_rows=failed_rows,
        failed_requests=with_retries(failed_requests(designer), breaker.failed_requests()),
        stopped=breaker.reason(),
    )


def with_retries(
    failed: dict[str, tuple[str, int]], retried: Counter[str]
) -> dict[str, tuple[str, int]]:
    """DataDesigner's failed requests per alias corrected by what `faults` knows per model
    (tries it retried, which DataDesigner never saw; requests it refused, which it counts),
    each model's under the first alias that calls it."""
    out = dict(failed)
    for model, n in retried.items():
        if not n:
            continue
        alias = next((a for a, (m, _) in out.items() if m == model), model)
        out[alias] = (model, max(out.get(alias, (model, 0))[1] + n, 0))
    return out


def record_failures(
    designer: Any, row_group: int | None = None, *, redact: Callable[[str], str] = _unchanged
) -> None:
    """Persist the failures of `row_group` as its batch finishes (from the captured failed
    calls), or, when `create()` ends, of every row group it touched (from its task traces);
    `persist` redacts them."""
    built = designer.last_builder
    if built is None:
        return
    dataset_dir = Path(built.artifact_storage.base_dataset_path)
    if row_group is not None:
        raw = designer.raw_answers.take(row_group)
        live = Counter(
            (column, failure_reason(r["error"])) for column, rs in raw.items() for r in rs
        )
        persist(dataset_dir, row_group, live, raw, redact)
        return
    traces = list(built.task_traces)
    for rg in sorted({t.row_group for t in traces if t.row_group is not None}):
        earlier = dataset_dir / FAILURES_DIR / f"rg-{rg:05d}.json"
        raw = json.loads(earlier.read_text()).get("raw", {}) if earlier.is_file() else {}
        for column, records in designer.raw_answers.take(rg).items():
            raw.setdefault(column, []).extend(records)
        failures = task_failures([t for t in traces if t.row_group == rg])
        persist(dataset_dir, rg, failures, raw, redact)


def _subscribe_usage(on_usage: Callable[[str, str, int, int], None] | None) -> Callable[[], None]:
    if on_usage is None:
        return lambda: None
    from data_designer.engine.models.usage_events import subscribe_token_usage  # see docstring

    return subscribe_token_usage(
        lambda e: on_usage(e.model_alias, e.model_name, e.input_tokens, e.output_tokens)
    )
