"""`report.html` for a run: counts, the funnel by stage, drops, judge scores, samplers, usage,
timings, sample rows and dropped rows, as one page rendered from `templates/report.html.j2`.

Why charts drawn as inline SVG, and no plotting library: a report must open anywhere, offline,
years later, from a copied run directory: no CDN, no JavaScript, no second file. The charts are
bar charts and histograms whose geometry is computed here and drawn by the template's macros.

Jinja2 with autoescape renders the page: row values come from models and users, and a report
must never run what a row contains. This module computes numbers and texts (the view model);
the template only places them.

Colours are the Okabe-Ito palette (safe for the common colour-vision deficiencies), and dropped
rows are hatched as well as orange, so kept and dropped still read apart in greyscale.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.records import DroppedRow
from bashgym.text import plain
from bashgym_commands_report.columns import ReportColumns
from bashgym_commands_report.rundir import BATCHES, Sample, StepDrops, TraceStats

if TYPE_CHECKING:
    import pandas as pd

REPORT_FILE = "report.html"
KEPT, DROPPED, OUTPUT = "#0072B2", "#E69F00", "#CC79A7"  # Okabe-Ito blue, orange, purple
HATCH = "url(#bg-hatch)"  # dropped: orange with dark stripes (the template's pattern)
STAGE_COLOURS = {"Source rows": "#999999", "Requested": "#56B4E9", "Generated": "#0072B2",
                 "Rows to sinks": "#56B4E9", "Kept": "#009E73"}  # fmt: skip
MAX_CATEGORIES = 15  # values per sampler chart; the rest are summed into one bar
MAX_EXAMPLES = 3  # dropped rows shown per reason
MAX_CELL = 360  # characters of a cell shown in a row table
MAX_MESSAGE = 900  # characters of one message shown in a conversation
MAX_MESSAGES = 14  # messages of one conversation shown
MAX_REASONS = 6  # drop reasons listed per funnel stage
RAW_KEYS = ("error", "raw_output", "raw")  # a dropped row's own account of itself: shown first
# run.json keys shown in sections of their own (or not at all); any other mapping in it is a
# plugin's own section (`Reported`), shown as it is
KNOWN_KEYS = frozenset({
    "counts", "usage", "usage_by_model", "usage_by_alias", "outputs", "artifacts", "timings_s",
    "plugins", "scrub", "tasks", "routing", "rounds", "notes", "cost_unknown_for",
})  # fmt: skip
BASE_TOKENS = ("input_tokens", "output_tokens")  # shown even when zero; cache counts only if used


@functools.cache
def _template() -> Any:
    # jinja2 (~20 ms quiet, measured with -X importtime): when a report is written, not in every
    # process that loads this plugin for its hooks
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("bashgym_commands_report", "templates"),
        autoescape=True,  # every {{ }} is escaped; the page has no |safe anywhere
        undefined=jinja2.StrictUndefined,  # a view-model key missing is a bug, not a blank
        trim_blocks=True,
        bytecode_cache=_bytecode_cache(jinja2),
    )
    env.globals.update(KEPT=KEPT, DROPPED=DROPPED, HATCH=HATCH, OUTPUT=OUTPUT, RAW_KEYS=RAW_KEYS)
    return env.get_template("report.html.j2")


def _bytecode_cache(jinja2: Any) -> Any:
    """Jinja's own cache of compiled templates in the user's cache dir (keyed by the template's
    source checksum, so an edited template compiles anew): compiling report.html's template was
    ~0.05-0.15 s of every run's end; loading it back is a millisecond. None (compile each time)
    where that dir cannot be made."""
    import platformdirs

    folder = Path(platformdirs.user_cache_dir("bashgym")) / "jinja"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder), "report-%s.cache")


def write_report(run_dir: Path, summary: Mapping[str, Any], **parts: Any) -> Path:
    """Write `run_dir/report.html` atomically (a reader never sees half a page); return it."""
    path = Path(run_dir) / REPORT_FILE
    tmp = path.with_name(REPORT_FILE + ".tmp")
    try:
        tmp.write_text(render_report(summary, **parts), encoding="utf-8")
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed write leaves no half page behind
        raise
    return path


def render_report(
    summary: Mapping[str, Any],
    *,
    kept: pd.DataFrame | None,
    dropped: Sequence[DroppedRow],
    columns: ReportColumns,
    samples: Sequence[Sample] = (),
    steps: StepDrops | None = None,
    traces: TraceStats | None = None,
    dropped_traces: TraceStats | None = None,
    job: Mapping[str, Any] | None = None,
    charted_from: str = "",
) -> str:
    """The whole report as one self-contained HTML page. Any summary key may be missing.

    `kept` holds the charted columns of the kept rows, `samples` kept rows as an output holds
    them, `steps` which step dropped what (events.jsonl), `traces` the kept traces' own
    outcomes, tokens and cost, `job` an orchestrator job's result (job.json), `charted_from`
    where `kept` was read."""
    rows = _Rows(kept, dropped, columns)
    counts = _mapping(summary.get("counts"))
    stages = _stages(summary, counts, steps or StepDrops())
    view = {
        "title": f"BashGym run · {Path(str(summary.get('run_dir') or 'run')).name}",
        "header": _header(summary),
        "tiles": _tiles(summary, counts, rows, stages),
        "funnel": _funnel(counts, stages),
        "traces": _traces(summary, traces, dropped_traces),
        "generic": [
            g
            for g in (
                _routing(_mapping(summary.get("routing"))),
                _job(job or {}),
                _scrub(_mapping(summary.get("scrub"))),
                *(
                    _generic(str(k).replace("_", " ").capitalize(), v)
                    for k, v in summary.items()
                    if k not in KNOWN_KEYS
                ),
            )
            if g
        ],
        "rounds": _rounds(summary.get("rounds")),
        "drops": _drops(counts, dropped),
        "charts": [
            {**c, "note": _charted_note(charted_from, stages)}
            for c in (
                _judges(columns.judges, rows, columns.thresholds),
                _samplers(columns.samplers, rows),
                _numbers(columns.numbers, rows),
            )
            if c
        ],
        "usage": _usage(summary),
        "timings": _timings(_mapping(summary.get("timings_s"))),
        "outputs": _outputs(_mapping(summary.get("outputs"))),
        "notes": [str(n) for n in summary.get("notes") or []]
        if isinstance(summary.get("notes"), list)
        else [],
        "samples": [
            {"sink": s.sink, "path": s.path, "rows": [_row_view(r) for r in s.rows]}
            for s in samples
        ],
        "examples": _examples(dropped),
    }
    return _template().render(**view)


# ---------------------------------------------------------------- the rows behind the charts


class _Rows:
    """Kept and dropped rows side by side, so each chart can stack one on the other."""

    def __init__(
        self, kept: pd.DataFrame | None, dropped: Sequence[DroppedRow], columns: ReportColumns
    ) -> None:
        wanted = columns.charted
        # Only the charted columns: a kept frame may carry whole traces per row.
        self.kept: list[Mapping[Any, Any]] = []
        if kept is not None:
            self.kept = kept[[c for c in kept.columns if c in wanted]].to_dict(orient="records")
        self.dropped: list[Mapping[str, Any]] = [d.row or {} for d in dropped]

    def values(self, getter: Any) -> tuple[list[Any], list[Any]]:
        """`getter(row)` over kept and dropped rows, Nones left out."""
        pick = [getter(row) for row in self.kept], [getter(row) for row in self.dropped]
        return [v for v in pick[0] if v is not None], [v for v in pick[1] if v is not None]


def _cell(value: Any) -> Any:
    """A cell as plain JSON values: numpy unwrapped, JSON object/array text parsed (parquet)."""
    value = plain(value)
    if isinstance(value, str) and value[:1] in ("{", "[") and value.rstrip()[-1:] in ("}", "]"):
        try:
            return plain(json.loads(value))
        except ValueError:
            return value
    return value


def _score(row: Mapping[str, Any], column: str, criterion: str) -> Any:
    cell = _cell(row.get(column))
    result = cell.get(criterion) if isinstance(cell, Mapping) else None
    score = _cell(result.get("score")) if isinstance(result, Mapping) else None
    if isinstance(score, str) and score.strip().lstrip("-").isdigit():
        return int(score)
    if isinstance(score, float) and score.is_integer():
        return int(score)
    return score


def _category(row: Mapping[str, Any], column: str) -> str | None:
    value = _cell(row.get(column))
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _number(row: Mapping[str, Any], column: str) -> float | None:
    value = _cell(row.get(column))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


# ---------------------------------------------------------------- stages (the funnel)


def _stages(
    summary: Mapping[str, Any], counts: Mapping[str, Any], steps: StepDrops
) -> list[dict[str, Any]]:
    """The run's stages in order, each with rows in, dropped (by reason) and out.

    A stage's drops are those its plugin made (events.jsonl's `by`), else those emitted while
    its step ran; without that log the reasons are sorted by the plugin names they start with.
    Each stage is measured against what it was given, so dropped + out = in within a row; a
    difference is shown, never hidden. A streaming run's sinks start with no total (they were
    fed as the source read): they were given what passed the judges of the rows generated."""
    by_stage = _drops_by_stage(summary, counts, steps)
    plugins = _mapping(summary.get("plugins"))
    stages: list[dict[str, Any]] = []
    source_rows = _int(counts.get("source_rows"))
    if source_rows is not None:
        lost = by_stage.get("source", Counter())
        name = _mapping(plugins.get("source")).get("name")
        stages.append(_stage(f"Source {name}" if name else "Source",
                             source_rows + sum(lost.values()), lost, source_rows,
                             "what the source read; its drops never became rows"))  # fmt: skip
    tasks = _mapping(summary.get("tasks"))
    if tasks or "executor" in by_stage:
        lost = by_stage.get("executor", Counter())
        done = sum(_int(v) or 0 for k, v in tasks.items() if k not in ("running", "interrupted"))
        name = _mapping(plugins.get("executor")).get("name")
        stages.append(_stage(f"Executor {name}" if name else "Executor", done or None, lost,
                             (done - sum(lost.values())) if done else None,
                             "each source row a task; a trace per finished task"))  # fmt: skip
    generated = _int(counts.get("generated"))
    lost, judged_out = by_stage.get("generation", Counter()), by_stage.get("judges", Counter())
    to_sinks = next((n for n in steps.sink_in.values() if n is not None), None)
    pipeline = _mapping(plugins.get("pipeline")).get("name")
    if pipeline:
        stages += _pipeline_stages(str(pipeline), summary, to_sinks, lost, judged_out)
    else:
        asked, in_rounds, surplus, beyond = _asked(summary, counts)
        lost = lost + judged_out  # no pipeline: the rows judged are the rows asked
        if to_sinks is None and steps.sink_in and generated is not None:
            to_sinks = generated - sum(lost.values())  # streamed: judged as they came
        judged = (
            bool(plugins.get("judge"))
            or lost
            or (generated is not None and source_rows is not None and generated != source_rows)
        )
        if judged and (asked is not None or generated is not None or lost):
            label = "Judges" if plugins.get("judge") else "Rows used"  # (a cap: -n)
            rows_in = asked if asked is not None else generated
            note = (in_rounds or "rows judged or capped by -n") + beyond
            stages.append(_stage(label, rows_in, lost, to_sinks, note, left_out=surplus))
    for sink in _sink_names(summary, steps):
        lost = by_stage.get(f"sink {sink}", Counter())
        rows_in = steps.sink_in.get(sink)
        rows_in = to_sinks if rows_in is None else rows_in
        note = "rows the sink was given, and the ones it wrote"
        extra = _int(counts.get(f"{sink}.subagent_lines")) or 0  # a line more per subagent
        if extra:
            whose = "is a subagent's" if extra == 1 else "are subagents'"
            note += f"; {extra:,} of the lines written {whose}, beyond the rows given"
        stages.append(_stage(f"Sink {sink}", rows_in, lost, steps.written.get(sink), note,
                             left_out=-extra))  # fmt: skip
    if "other" in by_stage:
        stages.append(_stage("Elsewhere", None, by_stage["other"], None, "outside any step"))
    return stages


def _asked(
    summary: Mapping[str, Any], counts: Mapping[str, Any]
) -> tuple[int | None, str, int, str]:
    """The rows asked (of a pipeline, or judged): in all rounds (run.json's
    `requested_in_rounds`, a round the run stopped in among them; else its `rounds` list),
    else `requested`; a note on the rounds when more than one; a top-up's surplus (the rows
    passed beyond those wanted) and its note."""
    rounds = summary.get("rounds") if isinstance(summary.get("rounds"), list) else []
    requested = _int(counts.get("requested"))
    asked = _int(counts.get("requested_in_rounds"))
    if asked is None:
        asked = sum(_int(_mapping(r).get("requested")) or 0 for r in rounds) or requested
    n_rounds = _int(counts.get("rounds")) or len(rounds)
    in_rounds = f"{asked:,} rows asked for in {n_rounds} rounds" if n_rounds > 1 and asked else ""
    surplus = _int(counts.get("top_up_surplus")) or 0
    beyond = ""
    if surplus:
        beyond = f"; {surplus:,} passed beyond the {requested or 0:,} wanted and were left out"
    return asked, in_rounds, surplus, beyond


FEWER = "fewer_than_asked"  # run.json's count of the rows a pipeline had no more to make of


def _pipeline_stages(
    pipeline: str, summary: Mapping[str, Any], to_sinks: int | None, lost: Counter[str],
    judged_out: Counter[str],
) -> list[dict[str, Any]]:  # fmt: skip
    """A pipeline's stages: its generation, from the rows asked of it to the rows it produced
    (run.json's `generated`: after its finalize, which may drop rows or make several of one;
    its columns' failures and the filters run inside it are its drops; `fewer_than_asked`:
    rows it had no more to make of, its note says why), then the judges' verdicts and a
    top-up's surplus on those rows, before the sinks."""
    counts = _mapping(summary.get("counts"))
    asked, in_rounds, surplus, beyond = _asked(summary, counts)
    generated = _int(counts.get("generated"))
    note = in_rounds or "rows asked of the pipeline"
    note += ", and the rows it produced (after its finalize)"
    stopped = _int(counts.get("stopped_round_rows")) or 0  # a round its model stopped: made
    pending = _int(counts.get("pending")) or 0  # in its finished batches, and not made yet
    fewer = _int(counts.get(FEWER)) or 0
    less = ", less its drops" if lost else ""
    made = 0  # rows the pipeline produced beyond those asked, less its drops
    if asked is not None and generated is not None:
        made = max(generated - (asked - sum(lost.values()) - stopped - pending - fewer), 0)
    if made:
        note += f"; {_rows(made)} more than asked{less}: its finalize made several rows of one"
    if fewer:
        besides = ", besides its drops" if lost else ""
        note += (f"; {_rows(fewer)} fewer than asked{besides}: the pipeline had no more to make "
                 "(its note says why)")  # fmt: skip
    if stopped or pending:
        note += (f"; the run stopped here with {_rows(stopped)} made in finished batches and "
                 f"{pending:,} pending (the same command resumes)")  # fmt: skip
    stages = [
        _stage(f"Generation {pipeline}", asked, lost, generated, note,
               left_out=stopped + pending + fewer - made)
    ]  # fmt: skip
    judges = bool(_mapping(summary.get("plugins")).get("judge")) or bool(judged_out)
    if judged_out or surplus or (to_sinks is not None and to_sinks != generated):
        label = "Judges" if judges else "Top-up"
        note = "the rows the pipeline produced" + (", judged" if judges else "") + beyond
        stages.append(_stage(label, generated, judged_out, to_sinks, note, left_out=surplus))
    return stages


def _stage(
    label: str, rows_in: int | None, lost: Counter[str], rows_out: int | None, note: str,
    *, left_out: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """One row of the stage table; `left_out`: rows neither dropped nor passed on (a top-up's
    surplus), said in the note; negative for rows out that no row in became (a sink's
    subagent lines)."""
    dropped = sum(lost.values())
    gap = None
    if rows_in is not None and rows_out is not None and rows_in - dropped - left_out != rows_out:
        gap = rows_in - dropped - left_out - rows_out
        note += (f"; {_rows(gap)} not accounted for" if gap > 0
                 else f"; {_rows(-gap)} more out than in, less the drops")  # fmt: skip
    reasons = [
        f"{n:,} ({_share(n, rows_in)}) {reason}" if rows_in else f"{n:,} {reason}"
        for reason, n in sorted(lost.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_REASONS]
    ]
    if len(lost) > MAX_REASONS:
        reasons.append(f"… {len(lost) - MAX_REASONS} more reasons (all below)")
    return {
        "label": label,
        "note": note,
        "rows_in": _n(rows_in),
        "dropped": f"{dropped:,}" + (f" ({_share(dropped, rows_in)})" if rows_in else ""),
        "rows_out": _n(rows_out),
        "reasons": reasons,
        "gap": gap,
        "lost": dropped,
    }


def _sink_names(summary: Mapping[str, Any], steps: StepDrops) -> list[str]:
    names = [s[5:] for s in steps.steps if s.startswith("sink ")]
    for entry in _mapping(summary.get("plugins")).get("sink") or []:
        name = _mapping(entry).get("name")
        if name and name not in names:
            names.append(str(name))
    return names


def _drops_by_stage(
    summary: Mapping[str, Any], counts: Mapping[str, Any], steps: StepDrops
) -> dict[str, Counter[str]]:
    """Drop reasons by stage (source, executor, generation, `sink NAME`, other)."""
    out: dict[str, Counter[str]] = {}
    plugins = _mapping(summary.get("plugins"))
    sinks = [str(_mapping(e).get("name")) for e in plugins.get("sink") or []]
    source = str(_mapping(plugins.get("source")).get("name") or "source")
    if steps.known:
        sinks += [s[5:] for s in steps.steps if s.startswith("sink ") and s[5:] not in sinks]
        for step, reasons in steps.by_step.items():
            for label, n in reasons.items():
                stage = _stage_of(step, label, steps, sinks, source)
                out.setdefault(stage, Counter())[label] += n
        return out
    executor = str(_mapping(plugins.get("executor")).get("name") or "executor")
    for reason, n in _mapping(counts.get("dropped")).items():
        label = str(reason)
        sink = next((s for s in sinks if label.startswith((s, f"sink {s}"))), None)
        stage = (f"sink {sink}" if sink else "source" if label.startswith((source, "source"))
                 else "executor" if label.startswith((executor, "executor"))
                 else "judges" if label.startswith("judge ")
                 else "generation")  # fmt: skip
        out.setdefault(stage, Counter())[label] += _int(n) or 0
    return out


def _stage_of(step: str, label: str, steps: StepDrops, sinks: list[str], source: str) -> str:
    """The stage of a drop counted against `step`. One that named no maker and says a sink's
    name first (`hf-hub: ...`, and nemo-jsonl's before it said `by`) is that sink's, whatever
    step ran: streamed sinks write inside the source's step. Not when the source has the same
    name (atif reads and writes): its own drops start that way too."""
    if (step, label) in steps.anonymous and not step.startswith("sink "):
        sink = next((s for s in sinks if s != source and label.startswith(f"{s}: ")), None)
        if sink:
            return f"sink {sink}"
    if step in ("source", "executor", "judges") or step.startswith("sink "):
        return step  # (`judges`: a judge's verdicts, on the rows the pipeline produced)
    return "other" if not step else "generation"


def _funnel(counts: Mapping[str, Any], stages: list[dict[str, Any]]) -> dict[str, Any] | None:
    points = [
        (label, _int(counts.get(key)))
        for key, label in (
            ("source_rows", "Source rows"),
            ("requested", "Requested"),
            ("generated", "Generated"),
            ("kept", "Kept"),
        )
    ]
    points = [(label, n) for label, n in points if n is not None]
    if not points and not stages:
        return None
    top = max((n for _, n in points), default=0) or 1
    width, left, right = 1000, 150, 170
    bars = [
        {"label": label, "n": n, "y": i * 42, "colour": STAGE_COLOURS[label],
         "w": max(n / top * (width - left - right), 2 if n else 0)}
        for i, (label, n) in enumerate(points)
    ]  # fmt: skip
    dropped = _int(counts.get("dropped_total"))
    note = (
        f"{_rows(dropped)} dropped in all; the reasons are below."
        if dropped
        else "No row was dropped."
        if dropped == 0
        else ""
    )
    return {
        "bars": bars, "width": width, "left": left, "height": max(len(bars) * 42 - 12, 0),
        "stages": stages, "gaps": any(s["gap"] for s in stages), "note": note,
    }  # fmt: skip


def _charted_note(charted_from: str, stages: list[dict[str, Any]]) -> str:
    """Where the kept rows of the charts come from, and what that leaves out."""
    if not charted_from:
        return ""
    note = f"Kept rows as {charted_from} holds them; dropped rows from dropped.jsonl."
    later = sum(s["lost"] for s in stages if s["label"].startswith("Sink "))
    if charted_from == BATCHES and later:
        note += (f" {later:,} rows the sinks dropped after generation count as kept here "
                 "(add -k parquet to chart exactly what was written).")  # fmt: skip
    return note


# ---------------------------------------------------------------- sections


def _header(summary: Mapping[str, Any]) -> dict[str, Any]:
    status = str(summary.get("status") or "unknown")
    started, ended = summary.get("started_at"), summary.get("ended_at")
    facts = [
        ("Run directory", str(summary.get("run_dir") or "?"), True),
        ("Started", _when(started), False),
        ("Ended", _when(ended) if ended else "—", False),
    ]
    total = _mapping(summary.get("timings_s")).get("total")
    if isinstance(total, int | float):
        facts.append(("Duration", _duration(float(total)), False))
    if summary.get("attempt") not in (None, 1):
        facts.append(("Attempt", str(summary.get("attempt")), False))
    if summary.get("bashgym_version"):
        facts.append(("BashGym", str(summary["bashgym_version"]), False))
    if summary.get("config_hash"):
        facts.append(("Config", str(summary["config_hash"]), True))
    plugins = []
    for role, entry in _mapping(summary.get("plugins")).items():
        for item in entry if isinstance(entry, list) else [entry]:
            item = _mapping(item) if isinstance(item, Mapping) else {"name": item}
            plugins.append((str(role), str(item.get("name", "?")), str(item.get("from") or "")))
    return {
        "status": status,
        "badge": {"ok": "ok", "failed": "bad", "empty": "bad"}.get(status, "warn"),
        "facts": facts,
        "plugins": plugins,
        "error": summary.get("error"),
        "warning": summary.get("warning"),
    }


def _tiles(
    summary: Mapping[str, Any], counts: Mapping[str, Any], rows: _Rows,
    stages: list[dict[str, Any]],
) -> list[tuple[str, str, str]]:  # fmt: skip
    kept = _int(counts.get("kept"), len(rows.kept) if rows.kept else None)
    dropped = _int(counts.get("dropped_total"))
    usage = _mapping(summary.get("usage"))
    tokens = sum(
        v for v in usage.values() if isinstance(v, int | float) and not isinstance(v, bool)
    )
    cost = summary.get("cost_usd")
    base = next(
        ((key, _int(counts.get(key))) for key in ("requested", "source_rows")
         if _int(counts.get(key))),
        (None, None),
    )  # fmt: skip
    share = f"{_share(kept, base[1])} of {base[0].replace('_', ' ')}" if kept and base[0] else ""
    where = " · ".join(  # a sink by its name: two sinks drop different rows
        f"{s['label'].lower() if s['label'].startswith('Sink ') else s['label'].split()[0].lower()}"
        f" {s['lost']:,}"
        for s in stages
        if s["lost"]
    )
    return [
        ("Kept rows", _n(kept), share),
        ("Dropped", _n(dropped), where),
        ("Tokens", _compact(tokens) if usage else "—", _tokens_note(usage)),
        ("Cost", _run_cost(summary), _per_row(cost, kept) if not _unpriced(summary) else ""),
    ]


def _traces(
    summary: Mapping[str, Any], kept: TraceStats | None, dropped: TraceStats | None
) -> dict[str, Any] | None:
    """Agent runs: task outcomes (an executor's), and the traces' own outcomes, tokens, cost."""
    blocks = []
    tasks = _mapping(summary.get("tasks"))
    if tasks:
        facts = [(str(k).replace("_", " ").capitalize(), _n(_int(v))) for k, v in tasks.items()]
        blocks.append({"heading": "Tasks (by status)", "facts": facts, "note": ""})
    for stats, heading in ((kept, "Kept traces"), (dropped, "Dropped traces")):
        if stats is None:
            continue
        facts = [
            ("Traces", _n(stats.traces)),
            ("Succeeded", _n(stats.success)),
            ("Failed", _n(stats.failed)),
        ]
        if stats.unknown:
            facts.append(("Outcome unknown", _n(stats.unknown)))
        facts.append(("Input tokens", _n(stats.input_tokens)))
        facts.append(("Output tokens", _n(stats.output_tokens)))
        if stats.cache_read_tokens or stats.cache_creation_tokens:
            facts += [("Cache reads", _n(stats.cache_read_tokens)),
                      ("Cache writes", _n(stats.cache_creation_tokens))]  # fmt: skip
        priced = stats.traces - stats.unpriced
        facts.append(("Cost", _usd(stats.cost_usd) if priced else "unknown"))
        note = f"What the agents spent, read from {stats.where}"
        if stats.unpriced and priced:
            note += f"; {stats.unpriced:,} traces carry no cost (not in the sum)"
        blocks.append({"heading": heading, "facts": facts, "note": note + "."})
    is_traces = any(_mapping(summary.get("plugins")).get(role) for role in ("executor",)) or _int(
        _mapping(summary.get("counts")).get("source.traces")
    )
    if kept is None and is_traces:
        blocks.append({
            "heading": "Kept traces", "facts": [],
            "note": "The traces' own outcomes, tokens and cost are unknown: no output of this "
                    "run keeps whole traces (add -k parquet to keep them beside the SFT lines).",
        })  # fmt: skip
    if not blocks:
        return None
    return {"title": "Agent runs", "blocks": blocks}


def _routing(r: Mapping[str, Any]) -> dict[str, Any] | None:
    """The router's account (work-tasks' `routing`): who ran what, verified success against
    sending everything to the teacher, and the cost saved."""
    if not r:
        return None
    success, cost = _mapping(r.get("success")), _mapping(r.get("cost"))
    escalations = _mapping(r.get("escalations"))
    facts = [
        ("Router", str(r.get("router") or "—")),
        ("Teacher", str(r.get("teacher") or "unknown")),
        ("Tasks", _n(_int(r.get("tasks")))),
        ("Escalations", _n(_int(escalations.get("count")))),
        ("Verified success", _rate(success.get("routed"), success.get("checked"),
                                   success.get("routed_rate"))),
        ("Retained vs all-teacher", _value("_pct", success.get("retained_pct"))),
        ("Cost", _usd(cost.get("routed_usd"))),
        ("All-teacher cost", _usd(cost.get("all_teacher_usd"))),
        ("Saved", _value("_pct", cost.get("saved_pct"))),
    ]  # fmt: skip
    executors = _mapping(r.get("executors"))
    rows = [
        [str(name), _n(_int(e.get("routed"))), _value("share", e.get("share")),
         _n(_int(e.get("attempts"))),
         _rate(e.get("verified"), e.get("checked"), e.get("verified_rate")),
         _usd(e.get("cost_usd")) if e.get("cost_usd") is not None else "unknown"]
        for name, e in ((n, _mapping(e)) for n, e in executors.items())
    ]  # fmt: skip
    head = ["executor", "routed", "share", "attempts", "verified", "cost"]
    if escalations.get("count"):
        rows.append(["(escalated attempts)", "", "", _n(_int(escalations.get("count"))),
                     _rate(escalations.get("verified"), escalations.get("checked"),
                           escalations.get("verified_rate")), ""])  # fmt: skip
    notes = [f"{what}: {basis}" for what, basis in (("Success", success.get("basis")),
             ("Cost", cost.get("basis"))) if basis]  # fmt: skip
    tables = [{"heading": "", "head": head, "rows": rows}] if rows else []
    lists = [{"heading": "How these were measured", "entries": notes}] if notes else []
    return {"title": "Routing", "facts": facts, "tables": tables, "lists": lists}


def _rate(passed: Any, checked: Any, rate: Any) -> str:
    """`4 of 5 (80%)`; — when nothing was checked."""
    if not _int(checked):
        return "— (none checked)"
    share = f" ({rate:.0%})" if isinstance(rate, int | float) else ""
    return f"{_int(passed) or 0:,} of {_int(checked):,}{share}"


def _job(job: Mapping[str, Any]) -> dict[str, Any] | None:
    """An orchestrator job's result (job.json): what merged, verify, cost and time. Its free
    text (verify output, failure reasons) stays in job.json: it was not scrubbed for a page."""
    if not job:
        return None
    verify = _mapping(job.get("verify"))
    counts = _mapping(job.get("counts"))
    facts = [
        ("Job", str(job.get("job") or "—")),
        ("Status", str(job.get("status") or "—")),
        *((str(state).capitalize(), _n(_int(n))) for state, n in counts.items()),
        ("Integration branch", str(job.get("integration_branch") or "—")),
        ("Commit", str(job.get("integration_commit") or "—")[:12]),
        ("Verify", ("passed" if verify.get("ok") else f"failed (exit {verify.get('exit_code')})")
         if verify else "not configured"),
        ("Cost", _usd(job.get("cost_usd"))),
        ("Budget", _usd(job.get("budget_usd")) if job.get("budget_usd") is not None else "none"),
        ("Wall time", _duration(float(job["wall_s"]))
         if isinstance(job.get("wall_s"), int | float) else "—"),
        ("Critical path", _duration(float(job["critical_path_s"]))
         if isinstance(job.get("critical_path_s"), int | float) else "—"),
    ]  # fmt: skip
    rows = [
        [str(tid), str(t.get("state") or "?"), _n(_int(t.get("attempts"))), _usd(t.get("cost_usd")),
         _duration(float(t["duration_s"])) if isinstance(t.get("duration_s"), int | float)
         else "—", str(t.get("branch") or "")]
        for tid, t in ((k, _mapping(v)) for k, v in _mapping(job.get("tasks")).items())
    ]  # fmt: skip
    head = ["task", "state", "attempts", "cost", "time", "branch"]
    lists = []
    if verify.get("command"):
        lists.append({"heading": "Verify command", "entries": [str(verify["command"])]})
    return {"title": "Orchestrator job", "facts": facts,
            "tables": [{"heading": "Tasks", "head": head, "rows": rows}] if rows else [],
            "lists": lists}  # fmt: skip


def _scrub(scrub: Mapping[str, Any]) -> dict[str, Any] | None:
    """What the secret scrubber replaced, by kind (the values themselves are gone)."""
    if not scrub:
        return None
    redacted = _mapping(scrub.get("redacted"))
    facts = [
        ("Scrubbing", "on" if scrub.get("enabled") else "off"),
        ("Secrets replaced", _n(_int(scrub.get("redacted_total")))),
        ("Rows touched", _n(_int(scrub.get("rows_touched")))),
        *((str(kind), _n(_int(n))) for kind, n in redacted.items()),
    ]
    return {"title": "Secret scrubbing", "facts": facts, "tables": [], "lists": []}


def _generic(title: str, data: Any) -> dict[str, Any] | None:
    """A section another plugin adds to run.json (`routing`, `orchestrator`): its numbers as
    facts, a table per mapping of mappings (one row each), lists as lists."""
    if not isinstance(data, Mapping) or not data:
        return None
    facts, tables, lists = [], [], []
    for key, value in data.items():
        name = str(key).replace("_", " ")
        if (
            isinstance(value, Mapping)
            and value
            and all(isinstance(v, Mapping) for v in value.values())
        ):
            head = list(dict.fromkeys(k for v in value.values() for k in v))
            rows = [
                [str(row_key), *(_value(str(h), _mapping(v).get(h)) for h in head)]
                for row_key, v in value.items()
            ]
            head_text = [name, *(h.replace("_", " ") for h in head)]
            tables.append({"heading": name.capitalize(), "head": head_text, "rows": rows})
        elif isinstance(value, Mapping):
            facts += [
                (f"{name} · {k}".replace("_", " "), _value(str(k), v)) for k, v in value.items()
            ]
        elif isinstance(value, list):
            lists.append({"heading": name.capitalize(),
                          "entries": [_value("", v) for v in value[:50]]})  # fmt: skip
        else:
            facts.append((name.capitalize(), _value(str(key), value)))
    return {"title": title, "facts": facts, "tables": tables, "lists": lists}


def _value(key: str, value: Any) -> str:
    """One value of a plugin's section: shares as percentages, costs in dollars."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value).lower()
    if isinstance(value, int | float):
        if key.endswith(("_pct", "percent")):
            return f"{value:.1f}%"
        if key.endswith(("share", "rate", "_fraction")) and 0 <= value <= 1:
            return f"{value:.0%}"
        if "cost" in key or key.endswith("usd"):
            return _usd(value)
        return f"{value:,}" if isinstance(value, int) else f"{value:,.3g}"
    if isinstance(value, str):
        return value
    return json.dumps(plain(value), default=str, ensure_ascii=False)[:MAX_CELL]


def _rounds(rounds: Any) -> list[list[str]]:
    if not isinstance(rounds, list):
        return []
    out = []
    for i, r in enumerate(rounds, 1):
        r = _mapping(r)
        req, gen, kept = (_int(r.get(k)) for k in ("requested", "generated", "kept"))
        out.append([str(i), _n(req), _n(gen), _n(kept), _share(kept or 0, gen or 0)])
    return out


def _drops(counts: Mapping[str, Any], dropped: Sequence[DroppedRow]) -> dict[str, Any] | None:
    reasons = {str(k): _int(v) or 0 for k, v in _mapping(counts.get("dropped")).items()}
    if not reasons and dropped:  # no counts (e.g. a failed run): count the rows we were given
        reasons = dict(Counter(f"{d.by}: {d.reason}" for d in dropped))
    if not any(reasons.values()):
        return None
    total = sum(reasons.values())
    items = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    top = items[0][1]
    rows = [_hbar(reason, [(n, HATCH)], top, f"{n:,} ({_share(n, total)})") for reason, n in items]
    return {"total": f"{total:,}", "rows": rows}


def _judges(
    judges: Mapping[str, list[str]], rows: _Rows, thresholds: Mapping[tuple[str, str], float]
) -> dict[str, Any] | None:
    figures, empty = [], []
    for column, criteria in judges.items():
        for criterion in criteria:
            kept, dropped = rows.values(lambda r, c=column, k=criterion: _score(r, c, k))
            if not kept and not dropped:
                empty.append(f"{column}.{criterion}")
                continue
            bins = _score_bins(kept + dropped)
            threshold = thresholds.get((column, criterion))  # from the config, never the data
            numeric = [v for v in kept if isinstance(v, int | float)]
            mean = f"mean kept {sum(numeric) / len(numeric):.2f} · " if numeric else ""
            figures.append({
                "title": f"{column} · {criterion}",
                "subtitle": f"{mean}{len(kept):,} kept, {len(dropped):,} dropped",
                "hist": _vhist(bins, Counter(kept), Counter(dropped), threshold),
            })  # fmt: skip
    if not figures and not empty:
        return None
    return {"title": "Judge scores", "figures": figures, "missing": empty, "wide": False}


def _samplers(samplers: Sequence[str], rows: _Rows) -> dict[str, Any] | None:
    figures, empty = [], []
    for column in samplers:
        kept, dropped = rows.values(lambda r, c=column: _category(r, c))
        if not kept and not dropped:
            empty.append(column)
            continue
        k, d = Counter(kept), Counter(dropped)
        order = sorted(set(k) | set(d), key=lambda v: (-(k[v] + d[v]), v))
        shown, rest = order[:MAX_CATEGORIES], order[MAX_CATEGORIES:]
        items = [(v, k[v], d[v]) for v in shown]
        if rest:
            other = f"({len(rest)} more values)"
            items.append((other, sum(k[v] for v in rest), sum(d[v] for v in rest)))
        top = max(a + b for _, a, b in items) or 1
        bars = [_hbar(value, [(a, KEPT), (b, HATCH)], top, _kd(a, b)) for value, a, b in items]
        figures.append(
            {"title": column, "subtitle": f"{len(set(k) | set(d))} values", "rows": bars,
             "hist": None}
        )  # fmt: skip
    if not figures and not empty:
        return None
    return {"title": "Sampler distributions", "figures": figures, "missing": empty, "wide": True}


def _numbers(numbers: Sequence[str], rows: _Rows) -> dict[str, Any] | None:
    figures, empty = [], []
    for column in numbers:
        kept, dropped = rows.values(lambda r, c=column: _number(r, c))
        if not kept and not dropped:
            empty.append(column)
            continue
        labels, bin_of = _number_bins(kept + dropped)
        k = Counter(bin_of(v) for v in kept)
        d = Counter(bin_of(v) for v in dropped)
        values = kept + dropped
        sub = f"min {_num(min(values))} · max {_num(max(values))} · {len(values):,} rows"
        figures.append({"title": column, "subtitle": sub, "hist": _vhist(labels, k, d, None)})
    if not figures and not empty:
        return None
    return {"title": "Numeric columns", "figures": figures, "missing": empty, "wide": False}


def _usage(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    usage = _mapping(summary.get("usage"))
    by_model = _mapping(summary.get("usage_by_model"))
    cost = summary.get("cost_usd")
    if not usage and not by_model and cost is None:
        return None
    names = {
        "input_tokens": "Input tokens",
        "output_tokens": "Output tokens",
        "cache_creation_tokens": "Cache writes",
        "cache_read_tokens": "Cache reads",
    }
    facts = [
        (names.get(k, k.replace("_", " ").capitalize()), _n(v))
        for k, v in usage.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and (v or k in BASE_TOKENS)
    ]
    requests = sum(_int(_mapping(m).get("requests")) or 0 for m in by_model.values())
    if requests:
        facts.append(("Requests", _n(requests)))
    facts.append(("Cost", _run_cost(summary)))
    models = [(str(name), _mapping(m)) for name, m in by_model.items()]
    unpriced = _unpriced(summary)
    tokens = {
        name: (_int(m.get("input_tokens")) or 0, _int(m.get("output_tokens")) or 0)
        for name, m in models
    }
    top = max((a + b for a, b in tokens.values()), default=0) or 1
    rows = []
    for name, m in sorted(models, key=lambda nm: -sum(tokens[nm[0]])):
        i, o = tokens[name]
        rows.append({
            "name": name, "requests": _n(_int(m.get("requests"))), "input": f"{i:,}",
            "output": f"{o:,}", "cost": "unknown" if name in unpriced else _usd(m.get("cost_usd")),
            "segments": _segments([(i, KEPT), (o, OUTPUT)], top), "title": f"{i:,} in · {o:,} out",
        })  # fmt: skip
    has_cost = bool(unpriced) or any(m.get("cost_usd") is not None for _, m in models)
    return {"facts": facts, "models": rows, "has_cost": has_cost}


def _timings(timings: Mapping[str, Any]) -> dict[str, Any] | None:
    steps = [
        (str(k), float(v))
        for k, v in timings.items()
        if k != "total" and isinstance(v, int | float) and not isinstance(v, bool)
    ]
    if not steps:
        return None
    top = max(v for _, v in steps) or 1.0
    total = timings.get("total")
    whole = float(total) if isinstance(total, int | float) else sum(v for _, v in steps)
    rows = [
        _hbar(step, [(v, "#009E73")], top, f"{_duration(v)} ({_share(v, whole)})")
        for step, v in steps
    ]
    return {"total": f"{_duration(whole)} in all", "rows": rows}


def _outputs(outputs: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    return [
        (str(sink), [str(p) for p in (paths if isinstance(paths, list) else [paths])])
        for sink, paths in outputs.items()
    ]


def _examples(dropped: Sequence[DroppedRow]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[DroppedRow]] = {}
    for d in dropped:
        groups.setdefault((d.by, d.reason), []).append(d)
    ordered = sorted(groups.items(), key=lambda kv: -len(kv[1]))  # the biggest group first, open
    return [
        {"reason": reason, "by": by, "n": len(items),
         "rows": [_row_view(d.row) for d in items[:MAX_EXAMPLES]]}
        for (by, reason), items in ordered
    ]  # fmt: skip


# ---------------------------------------------------------------- one row, readable


def _row_view(row: Mapping[str, Any] | None) -> dict[str, Any]:
    """A row as the page shows it: a conversation when it is one (SFT `messages`, a `trace`),
    else a table of cells; a dropped row's error and raw output come first."""
    row = dict(row or {})
    messages = _cell(row.get("messages"))
    trace = _cell(row.get("trace")) if "trace" in row else None
    if isinstance(trace, Mapping) and isinstance(trace.get("messages"), list):
        messages = trace["messages"]
        if trace.get("system_prompt"):
            messages = [{"role": "system", "content": trace["system_prompt"]}, *messages]
    chat = None
    more = ""
    if isinstance(messages, list) and messages and all(isinstance(m, Mapping) for m in messages):
        chat = [_message(m) for m in messages[:MAX_MESSAGES]]
        if len(messages) > MAX_MESSAGES:
            more = f"{len(messages) - MAX_MESSAGES} more messages"
        row.pop("messages", None)
        row.pop("trace", None)
    first = [k for k in RAW_KEYS if k in row]
    cells = []
    for key in [*first, *(k for k in row if k not in first)]:
        text = _cell_text(_cell(row[key]))
        cells.append((str(key), text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"))
    summary = f"{len(chat)} messages" if chat is not None else f"{len(cells)} columns"
    if chat is not None and more:
        summary = f"{len(chat) + int(more.split()[0])} messages"
    return {"chat": chat, "more": more, "cells": cells, "summary": summary}


def _message(m: Mapping[str, Any]) -> dict[str, str]:
    content = m.get("content")
    if isinstance(content, list):  # content parts: their text
        content = "\n".join(
            str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content
        )
    text = "" if content is None else str(content)
    calls = m.get("tool_calls") or []
    notes = []
    for call in calls if isinstance(calls, list) else []:
        fn = _mapping(_mapping(call).get("function")) or _mapping(call)
        args = fn.get("arguments")
        args = args if isinstance(args, str) else json.dumps(plain(args), default=str)
        text += f"\n→ {fn.get('name')}({args})"
    if m.get("tool_call_id"):
        notes.append(f"result of {m.get('tool_call_id')}")
    if m.get("is_error"):
        notes.append("error")
    text = text.strip("\n")
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    return {"role": str(m.get("role") or "?"), "text": text, "note": ", ".join(notes)}


def _cell_text(value: Any) -> str:
    """A cell as text; a judge's verdicts read as one line per criterion: `name: score · why`."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, Mapping)
        and value
        and all(isinstance(v, Mapping) and "score" in v for v in value.values())
    ):
        return "\n".join(
            f"{name}: {v['score']} · {v.get('reasoning') or ''}".rstrip(" ·")
            for name, v in value.items()
        )
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "\n---\n".join(value)  # e.g. a failed cell's raw answers, one after the other
    return json.dumps(value, default=str, ensure_ascii=False)


# ---------------------------------------------------------------- chart geometry


def _score_bins(values: Iterable[Any]) -> list[Any]:
    """The x axis of a score histogram: 1..5 when the scores fit (empty bins show too)."""
    values = set(values)
    if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        lo, hi = min(min(values), 1), max(max(values), 5)
        return list(range(lo, hi + 1)) if hi - lo <= 20 else sorted(values)
    return sorted(values, key=lambda v: (not isinstance(v, int | float), str(v)))


def _number_bins(values: list[float]) -> tuple[list[str], Any]:
    """Labels and a value -> label function: one bin per integer when few, else 12 equal bins."""
    distinct = sorted(set(values))
    if all(v.is_integer() for v in distinct) and distinct[-1] - distinct[0] <= 20:
        labels = [_num(v) for v in range(int(distinct[0]), int(distinct[-1]) + 1)]
        return labels, lambda v: _num(int(v))
    lo, hi = distinct[0], distinct[-1]
    n = 12 if hi > lo else 1
    step = (hi - lo) / n or 1.0
    labels = [_num(lo + i * step) for i in range(n)]
    return labels, lambda v: labels[min(int((v - lo) / step), n - 1)]


def _vhist(bins: list[Any], kept: Counter, dropped: Counter, threshold: Any) -> dict[str, Any]:
    """A vertical stacked histogram: kept at the bottom, dropped (hatched) on top."""
    width, height, left, bottom, top_pad = 320, 190, 34, 24, 16
    plot_w, plot_h = width - left - 6, height - bottom - top_pad
    peak = max((kept[b] + dropped[b] for b in bins), default=0) or 1
    slot = plot_w / max(len(bins), 1)
    bar_w = slot * 0.72
    tick = _nice_tick(peak)
    grid = [
        {"y": top_pad + plot_h - t / peak * plot_h, "label": str(t)}
        for t in range(0, peak + 1, tick)
    ]
    bars, texts = [], []
    label_every = max(1, math.ceil(len(bins) / 6))
    for i, b in enumerate(bins):
        x = left + i * slot + (slot - bar_w) / 2
        y = top_pad + plot_h
        for n, fill, what in ((kept[b], KEPT, "kept"), (dropped[b], HATCH, "dropped")):
            if n:
                h = n / peak * plot_h
                y -= h
                bars.append({"x": x, "y": y, "w": bar_w, "h": h, "fill": fill,
                             "title": f"{b}: {n:,} {what}"})  # fmt: skip
        total = kept[b] + dropped[b]
        if total:
            texts.append({"x": x + bar_w / 2, "y": y - 4, "text": f"{total:,}"})
        if i % label_every == 0:
            texts.append({"x": x + bar_w / 2, "y": height - 8, "text": _short(str(b), 10)})
    cut = None
    if threshold is not None and threshold in bins:
        x = left + bins.index(threshold) * slot
        cut = {"x": x, "y1": top_pad - 6, "y2": top_pad + plot_h, "label": _num(threshold)}
    return {"width": width, "height": height, "left": left, "right": width - 6, "grid": grid,
            "bars": bars, "texts": texts, "cut": cut, "axis": top_pad + plot_h}  # fmt: skip


def _nice_tick(peak: int) -> int:
    raw = max(peak / 4, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    return int(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


def _hbar(label: str, segments: list[tuple[float, str]], top: float, value: str) -> dict:
    """One row of a horizontal bar chart: label (wraps in HTML) | SVG bar | value."""
    return {"label": str(label), "value": value, "segments": _segments(segments, top)}


def _segments(segments: list[tuple[float, str]], top: float) -> list[dict[str, Any]]:
    x, out = 0.0, []
    for n, fill in segments:
        if n:
            w = max(n / (top or 1) * 100, 0.6)
            out.append({"x": x, "w": w, "fill": fill})
            x += w
    return out


# ---------------------------------------------------------------- formatting


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any, default: int | None = None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def _rows(n: int) -> str:
    return f"{n:,} row" if n == 1 else f"{n:,} rows"


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _num(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def _compact(n: float) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return f"{n:,.0f}"


def _usd(cost: Any) -> str:
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return "—"
    if cost == 0:
        return "$0"
    return f"${cost:,.4f}" if cost < 1 else f"${cost:,.2f}"


def _unpriced(summary: Mapping[str, Any]) -> list[str]:
    """The models run.json lists as having no price (their share of the cost is unknown)."""
    names = summary.get("cost_unknown_for")
    return [str(n) for n in names] if isinstance(names, list) else []


def _run_cost(summary: Mapping[str, Any]) -> str:
    """The run's cost, or what is known of it: with any unpriced model run.json's `cost_usd` is
    null and `cost_known_usd` what the priced models cost, a floor, never the cost ("$0" would
    read as free; a run.json of bashgym 0.1 kept that floor in `cost_usd`)."""
    unpriced = _unpriced(summary)
    if not unpriced:
        return _usd(summary.get("cost_usd"))
    cost = summary.get("cost_known_usd", summary.get("cost_usd"))
    known = f"{_usd(cost)} + " if isinstance(cost, int | float) and cost else ""
    return f"{known}unknown (no price for {', '.join(unpriced)})"


def _per_row(cost: Any, kept: int | None) -> str:
    if isinstance(cost, int | float) and cost and kept:
        return f"{_usd(cost / kept)} per kept row"
    return ""


def _tokens_note(usage: Mapping[str, Any]) -> str:
    i, o = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    return f"{_compact(i or 0)} in · {_compact(o or 0)} out" if usage else ""


def _share(part: float | None, whole: float | None) -> str:
    if not whole or part is None:
        return "—"
    share = part / whole
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def _kd(kept: int, dropped: int) -> str:
    return f"{kept:,} kept · {dropped:,} dropped" if dropped else f"{kept:,} kept"


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _when(stamp: Any) -> str:
    if not stamp:
        return "—"
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (f" {moment.tzname()}" if moment.tzinfo else "")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"
