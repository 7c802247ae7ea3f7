"""`report.html` for a run: the counts, drops, judge scores, samplers, usage and timings as plots.

Why charts drawn here as inline SVG, and no plotting library: a report must open anywhere,
offline, years later, from a copied run directory: no CDN, no JavaScript, no second file. The
charts are bar charts and histograms, a few dozen lines of SVG, so a plotting dependency
(matplotlib, plotly: tens of MB, a font cache, a JS bundle) would buy nothing. SVG stays sharp
when zoomed and prints well; the page has `@media print` rules and each section avoids page breaks.

Colours are the Okabe-Ito palette (safe for the common colour-vision deficiencies), and dropped
rows are hatched as well as orange, so kept and dropped still read apart in greyscale.

Every text that reaches the page goes through `html.escape`: row values come from models and
users, and a report must never run what a row contains.
"""

from __future__ import annotations

import html
import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from bashgym.records import DroppedRow
from bashgym.text import plain

if TYPE_CHECKING:
    import pandas as pd

REPORT_FILE = "report.html"
KEPT, DROPPED = "#0072B2", "#E69F00"  # Okabe-Ito blue and orange
HATCH = "url(#bg-hatch)"  # dropped: orange with dark stripes (see HATCH_DEFS)
STAGE_COLOURS = ("#999999", "#56B4E9", "#0072B2", "#009E73")
MAX_CATEGORIES = 15  # values per sampler chart; the rest are summed into one bar
MAX_EXAMPLES = 3  # dropped rows shown per reason
MAX_CELL = 360  # characters of a cell shown in an example
BASE_TOKENS = ("input_tokens", "output_tokens")  # shown even when zero; cache counts only if used
# Samplers whose values are categories (bars per value) vs numbers (a binned histogram).
CATEGORY_SAMPLERS = frozenset({"category", "subcategory", "bernoulli"})
NUMBER_SAMPLERS = frozenset(
    {"uniform", "gaussian", "poisson", "binomial", "scipy", "bernoulli_mixture"}
)


@dataclass
class ReportColumns:
    """Which dataset columns get which chart."""

    samplers: list[str]  # category-like columns: value distributions
    judges: dict[str, list[str]]  # judge column -> criterion names: score histograms
    numbers: list[str] = field(default_factory=list)  # other numeric columns: histograms
    # (judge column, criterion) -> the lowest score the config keeps (from its filter rules)
    thresholds: dict[tuple[str, str], float] = field(default_factory=dict)


def columns_of(builder: Any) -> ReportColumns:
    """The chartable columns of a DataDesignerConfigBuilder, read from its column configs.

    Sampler columns with category-like values become distributions, numeric samplers and
    int/float expressions become histograms, and every LLM judge column brings its score names.
    Columns marked `drop` are kept: the renderer shows only what the rows carry.
    """
    samplers: list[str] = []
    numbers: list[str] = []
    judges: dict[str, list[str]] = {}
    for config in builder.get_column_configs():
        kind = _enum_text(getattr(config, "column_type", ""))
        if kind == "sampler":
            sampler = _enum_text(getattr(config, "sampler_type", ""))
            if sampler in CATEGORY_SAMPLERS:
                samplers.append(config.name)
            elif sampler in NUMBER_SAMPLERS:
                numbers.append(config.name)
        elif kind == "llm-judge":
            judges[config.name] = [score.name for score in getattr(config, "scores", [])]
        elif kind == "expression" and _enum_text(getattr(config, "dtype", "")) in ("int", "float"):
            numbers.append(config.name)
    thresholds = {}
    for processor in getattr(builder, "get_processor_configs", list)():
        for rule in getattr(processor, "rules", None) or []:
            mark = _mapping(getattr(rule, "threshold", None) or _mapping(rule).get("threshold"))
            if mark.get("column") and mark.get("criterion") and mark.get("min") is not None:
                thresholds[(str(mark["column"]), str(mark["criterion"]))] = mark["min"]
    return ReportColumns(samplers, judges, numbers, thresholds)


def columns_from_config(doc: Mapping[str, Any]) -> ReportColumns:
    """`columns_of` for a saved DataDesigner config (`builder_config.json` in a run dir)."""
    config = _mapping(_mapping(doc).get("data_designer"))
    configs = config.get("columns") or []
    builder = SimpleNamespace(
        get_processor_configs=lambda: list(config.get("processors") or []),
        get_column_configs=lambda: [
            SimpleNamespace(
                **{k: v for k, v in _mapping(c).items() if k != "scores"},
                scores=[
                    SimpleNamespace(name=_mapping(x).get("name")) for x in c.get("scores") or []
                ],
            )
            for c in configs
            if isinstance(c, Mapping) and "name" in c
        ],
    )
    return columns_of(builder)


def write_report(
    run_dir: Path,
    summary: Mapping[str, Any],
    *,
    kept: pd.DataFrame | None,
    dropped: Sequence[DroppedRow],
    columns: ReportColumns,
) -> Path:
    """Write `run_dir/report.html` atomically (a reader never sees half a page); return it."""
    path = Path(run_dir) / REPORT_FILE
    tmp = path.with_name(REPORT_FILE + ".tmp")
    tmp.write_text(
        render_report(summary, kept=kept, dropped=dropped, columns=columns), encoding="utf-8"
    )
    tmp.replace(path)
    return path


def render_report(
    summary: Mapping[str, Any],
    *,
    kept: pd.DataFrame | None,
    dropped: Sequence[DroppedRow],
    columns: ReportColumns,
) -> str:
    """The whole report as one self-contained HTML page. Any summary key may be missing."""
    rows = _Rows(kept, dropped, columns)
    counts = _mapping(summary.get("counts"))
    sections = [
        _header(summary),
        _tiles(summary, counts, rows),
        _funnel(counts),
        _rounds(summary.get("rounds")),
        _drops(counts, dropped),
        _judges(columns.judges, rows, columns.thresholds),
        _samplers(columns.samplers, rows),
        _numbers(columns.numbers, rows),
        _usage(summary),
        _timings(_mapping(summary.get("timings_s"))),
        _outputs(_mapping(summary.get("outputs"))),
        _notes(summary.get("notes")),
        _examples(dropped),
    ]
    title = f"BashGym run · {Path(str(summary.get('run_dir') or 'run')).name}"
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>{HATCH_DEFS}<main>"
        + "".join(s for s in sections if s)
        + "<footer>Written by BashGym · one self-contained file: no scripts, no network."
        "</footer></main></body></html>\n"
    )


# ---------------------------------------------------------------- the rows behind the charts


class _Rows:
    """Kept and dropped rows side by side, so each chart can stack one on the other."""

    def __init__(
        self, kept: pd.DataFrame | None, dropped: Sequence[DroppedRow], columns: ReportColumns
    ) -> None:
        wanted = [*columns.samplers, *columns.judges, *columns.numbers]
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


# ---------------------------------------------------------------- sections


def _header(summary: Mapping[str, Any]) -> str:
    status = str(summary.get("status") or "unknown")
    badge = {"ok": "ok", "failed": "bad", "empty": "bad"}.get(status, "warn")
    started, ended = summary.get("started_at"), summary.get("ended_at")
    facts = [
        ("Run directory", f"<code>{_e(summary.get('run_dir') or '?')}</code>"),
        ("Started", _e(_when(started))),
        ("Ended", _e(_when(ended)) if ended else "—"),
    ]
    total = _mapping(summary.get("timings_s")).get("total")
    if isinstance(total, int | float):
        facts.append(("Duration", _e(_duration(total))))
    if summary.get("bashgym_version"):
        facts.append(("BashGym", _e(summary["bashgym_version"])))
    plugins = []
    for role, info in _mapping(summary.get("plugins")).items():
        for item in info if isinstance(info, list) else [info]:
            item = _mapping(item) if isinstance(item, Mapping) else {"name": item}
            source = (
                f" <span class='muted'>from {_e(item['from'])}</span>" if item.get("from") else ""
            )
            plugins.append(
                f"<span class='chip'><b>{_e(role)}</b> {_e(item.get('name', '?'))}{source}</span>"
            )
    error = summary.get("error")
    warning = summary.get("warning")
    return (
        "<header><div class='title'><h1>BashGym run report</h1>"
        f"<span class='badge {badge}'>{_e(status)}</span></div>"
        "<dl class='facts'>"
        + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
        + "</dl>"
        + (f"<div class='chips'>{''.join(plugins)}</div>" if plugins else "")
        + (f"<div class='error'><b>Run failed:</b> {_e(error)}</div>" if error else "")
        + (f"<div class='error'><b>Warning:</b> {_e(warning)}</div>" if warning else "")
        + "</header>"
    )


def _tiles(summary: Mapping[str, Any], counts: Mapping[str, Any], rows: _Rows) -> str:
    kept = _int(counts.get("kept"), len(rows.kept) if rows.kept else None)
    generated = _int(counts.get("generated"))
    dropped = _int(counts.get("dropped_total"))
    usage = _mapping(summary.get("usage"))
    tokens = sum(
        v for v in usage.values() if isinstance(v, int | float) and not isinstance(v, bool)
    )
    cost = summary.get("cost_usd")
    tiles = [
        ("Kept rows", _n(kept), _pct(kept, generated, "of generated")),
        ("Dropped", _n(dropped), _dropped_note(dropped, counts)),
        ("Tokens", _compact(tokens) if usage else "—", _tokens_note(usage)),
        ("Cost", _usd(cost), _per_row(cost, kept)),
    ]
    return (
        "<section class='tiles'>"
        + "".join(
            f"<div class='tile'><div class='k'>{_e(k)}</div><div class='v'>{_e(v)}</div>"
            f"<div class='s'>{_e(s)}</div></div>"
            for k, v, s in tiles
        )
        + "</section>"
    )


def _funnel(counts: Mapping[str, Any]) -> str:
    stages = [
        (label, _int(counts.get(key)))
        for key, label in (
            ("source_rows", "Source rows"),
            ("requested", "Requested"),
            ("generated", "Generated"),
            ("kept", "Kept"),
        )
    ]
    stages = [(label, n) for label, n in stages if n is not None]
    if not stages:
        return ""
    top = max(n for _, n in stages) or 1
    base = next((n for label, n in stages if label == "Requested"), None) or stages[0][1]
    bar_h, gap, width, left, right = 30, 12, 1000, 150, 170
    span = width - left - right
    parts = []
    for i, (label, n) in enumerate(stages):
        y = i * (bar_h + gap)
        w = max(n / top * span, 2 if n else 0)
        colour = STAGE_COLOURS[["Source rows", "Requested", "Generated", "Kept"].index(label)]
        parts.append(
            f"<text x='{left - 12}' y='{y + bar_h / 2 + 5}' text-anchor='end' "
            f"class='lbl'>{label}</text>"
            f"<rect x='{left}' y='{y}' width='{w:.1f}' height='{bar_h}' rx='4' fill='{colour}'>"
            f"<title>{label}: {n:,}</title></rect>"
            f"<text x='{left + w + 10:.1f}' y='{y + bar_h / 2 + 5}' class='val'>{n:,}"
            f"<tspan class='muted'>{_e(_pct(n, base, '', bare=True))}</tspan></text>"
        )
    height = len(stages) * (bar_h + gap) - gap
    dropped = _int(counts.get("dropped_total"))
    note = (
        f"<p class='muted'>{dropped:,} rows dropped in all; the reasons are below.</p>"
        if dropped
        else "<p class='muted'>No row was dropped.</p>"
        if dropped == 0
        else ""
    )
    return _section(
        "Funnel",
        f"<svg viewBox='0 0 {width} {height}' class='chart' role='img' "
        f"aria-label='rows at each stage'>{''.join(parts)}</svg>{note}",
    )


def _rounds(rounds: Any) -> str:
    if not isinstance(rounds, list) or not rounds:
        return ""
    head = "<tr><th>Round</th><th class='num'>Requested</th><th class='num'>Generated</th>"
    head += "<th class='num'>Kept</th><th class='num'>Keep rate</th></tr>"
    body = []
    for i, r in enumerate(rounds, 1):
        r = _mapping(r)
        req, gen, kept = (_int(r.get(k)) for k in ("requested", "generated", "kept"))
        body.append(
            f"<tr><td>{i}</td><td class='num'>{_n(req)}</td><td class='num'>{_n(gen)}</td>"
            f"<td class='num'>{_n(kept)}</td>"
            f"<td class='num'>{_e(_share(kept or 0, gen or 0))}</td></tr>"
        )
    return _section(
        "Generation rounds",
        "<p class='muted'>Each round asks for the rows still missing.</p>"
        f"<table>{head}{''.join(body)}</table>",
    )


def _drops(counts: Mapping[str, Any], dropped: Sequence[DroppedRow]) -> str:
    reasons = {str(k): _int(v) or 0 for k, v in _mapping(counts.get("dropped")).items()}
    if not reasons and dropped:  # no counts (e.g. a failed run): count the rows we were given
        reasons = dict(Counter(f"{d.by}: {d.reason}" for d in dropped))
    if not any(reasons.values()):
        return ""
    total = sum(reasons.values())
    items = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
    top = items[0][1]
    bars = [_hbar(reason, [(n, HATCH)], top, f"{n:,} ({_share(n, total)})") for reason, n in items]
    return _section(f"Dropped rows by reason · {total:,}", _hbars(bars))


def _judges(
    judges: Mapping[str, list[str]], rows: _Rows, thresholds: Mapping[tuple[str, str], float]
) -> str:
    charts, empty = [], []
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
            charts.append(
                _figure(
                    f"{column} · {criterion}",
                    f"{mean}{len(kept):,} kept, {len(dropped):,} dropped",
                    _vhist(bins, Counter(kept), Counter(dropped), threshold),
                )
            )
    if not charts and not empty:
        return ""
    body = _legend() + f"<div class='grid'>{''.join(charts)}</div>" + _missing(empty)
    return _section("Judge scores", body)


def _samplers(samplers: Sequence[str], rows: _Rows) -> str:
    charts, empty = [], []
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
        charts.append(_figure(column, f"{len(set(k) | set(d))} values", _hbars(bars)))
    if not charts and not empty:
        return ""
    body = _legend() + f"<div class='grid wide'>{''.join(charts)}</div>" + _missing(empty)
    return _section("Sampler distributions", body)


def _numbers(numbers: Sequence[str], rows: _Rows) -> str:
    charts, empty = [], []
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
        charts.append(_figure(column, sub, _vhist(labels, k, d, None)))
    if not charts and not empty:
        return ""
    body = _legend() + f"<div class='grid'>{''.join(charts)}</div>" + _missing(empty)
    return _section("Numeric columns", body)


def _usage(summary: Mapping[str, Any]) -> str:
    usage = _mapping(summary.get("usage"))
    by_model = _mapping(summary.get("usage_by_model"))
    cost = summary.get("cost_usd")
    if not usage and not by_model and cost is None:
        return ""
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
    facts.append(("Cost", _usd(cost)))
    body = (
        "<dl class='facts big'>"
        + "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
        + "</dl>"
    )
    if by_model:
        models = [(str(name), _mapping(m)) for name, m in by_model.items()]
        tokens = {
            name: (_int(m.get("input_tokens")) or 0, _int(m.get("output_tokens")) or 0)
            for name, m in models
        }
        top = max((a + b for a, b in tokens.values()), default=0) or 1
        has_cost = any(m.get("cost_usd") is not None for _, m in models)
        rows = []
        for name, m in sorted(models, key=lambda nm: -sum(tokens[nm[0]])):
            i, o = tokens[name]
            bar = _bar_svg([(i, KEPT), (o, "#CC79A7")], top, f"{i:,} in · {o:,} out")
            rows.append(
                f"<tr><td><code>{_e(name)}</code></td>"
                f"<td class='num'>{_n(_int(m.get('requests')))}</td>"
                f"<td class='num'>{i:,}</td><td class='num'>{o:,}</td>"
                + (f"<td class='num'>{_e(_usd(m.get('cost_usd')))}</td>" if has_cost else "")
                + f"<td class='barcell'>{bar}</td></tr>"
            )
        body += (
            "<div class='legend'>"
            + _swatch(KEPT, "input tokens")
            + _swatch("#CC79A7", "output tokens")
            + "</div><table><tr><th>Model</th><th class='num'>Requests</th>"
            "<th class='num'>Input</th><th class='num'>Output</th>"
            + ("<th class='num'>Cost</th>" if has_cost else "")
            + f"<th>Tokens</th></tr>{''.join(rows)}</table>"
        )
    return _section("Token usage and cost", body)


def _timings(timings: Mapping[str, Any]) -> str:
    steps = [
        (str(k), float(v))
        for k, v in timings.items()
        if k != "total" and isinstance(v, int | float) and not isinstance(v, bool)
    ]
    if not steps:
        return ""
    top = max(v for _, v in steps) or 1.0
    total = timings.get("total")
    whole = float(total) if isinstance(total, int | float) else sum(v for _, v in steps)
    bars = [
        _hbar(step, [(v, "#009E73")], top, f"{_duration(v)} ({_share(v, whole)})")
        for step, v in steps
    ]
    return _section(f"Time per step · {_duration(whole)} in all", _hbars(bars))


def _outputs(outputs: Mapping[str, Any]) -> str:
    items = []
    for sink, paths in outputs.items():
        paths = paths if isinstance(paths, list) else [paths]
        listed = "".join(f"<li><code>{_e(p)}</code></li>" for p in paths) or "<li>nothing</li>"
        items.append(f"<div><h3>{_e(sink)}</h3><ul class='paths'>{listed}</ul></div>")
    return _section("Outputs", "".join(items)) if items else ""


def _notes(notes: Any) -> str:
    if not isinstance(notes, list) or not notes:
        return ""
    return _section("Notes", "<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>")


def _examples(dropped: Sequence[DroppedRow]) -> str:
    groups: dict[tuple[str, str], list[DroppedRow]] = {}
    for d in dropped:
        groups.setdefault((d.by, d.reason), []).append(d)
    if not groups:
        return ""
    blocks = []
    for i, ((by, reason), items) in enumerate(sorted(groups.items(), key=lambda kv: -len(kv[1]))):
        shown = "".join(_row_table(d.row) for d in items[:MAX_EXAMPLES])
        blocks.append(  # the biggest group open: what was dropped most, at a glance
            f"<details{' open' if i == 0 else ''}><summary><b>{_e(reason)}</b> "
            f"<span class='muted'>· {_e(by)} · "
            f"{len(items):,} rows, {min(len(items), MAX_EXAMPLES)} shown</span></summary>"
            f"{shown}</details>"
        )
    return _section("Examples of dropped rows", "".join(blocks))


def _row_table(row: Mapping[str, Any]) -> str:
    if not row:
        return "<p class='muted'>(the row was not recorded)</p>"
    cells = []
    for key, value in row.items():
        text = _cell_text(_cell(value))
        if len(text) > MAX_CELL:
            text = text[: MAX_CELL - 1] + "…"
        cells.append(f"<tr><th>{_e(key)}</th><td>{_e(text)}</td></tr>")
    return f"<table class='row'>{''.join(cells)}</table>"


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
    return json.dumps(value, default=str, ensure_ascii=False)


# ---------------------------------------------------------------- chart pieces


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


def _vhist(bins: list[Any], kept: Counter, dropped: Counter, threshold: Any) -> str:
    """A vertical stacked histogram: kept at the bottom, dropped (hatched) on top."""
    width, height, left, bottom, top_pad = 320, 190, 34, 24, 16
    plot_w, plot_h = width - left - 6, height - bottom - top_pad
    peak = max((kept[b] + dropped[b] for b in bins), default=0) or 1
    slot = plot_w / max(len(bins), 1)
    bar_w = slot * 0.72
    tick = _nice_tick(peak)
    parts = []
    for t in range(0, peak + 1, tick):
        y = top_pad + plot_h - t / peak * plot_h
        parts.append(
            f"<line x1='{left}' x2='{width - 6}' y1='{y:.1f}' y2='{y:.1f}' class='grid'/>"
            f"<text x='{left - 5}' y='{y + 3.5:.1f}' text-anchor='end' class='tick'>{t}</text>"
        )
    label_every = max(1, math.ceil(len(bins) / 6))
    for i, b in enumerate(bins):
        x = left + i * slot + (slot - bar_w) / 2
        y = top_pad + plot_h
        for n, fill, what in ((kept[b], KEPT, "kept"), (dropped[b], HATCH, "dropped")):
            if n:
                h = n / peak * plot_h
                y -= h
                parts.append(
                    f"<rect x='{x:.1f}' y='{y:.1f}' width='{bar_w:.1f}' height='{h:.1f}' "
                    f"fill='{fill}'><title>{_e(b)}: {n:,} {what}</title></rect>"
                )
        total = kept[b] + dropped[b]
        if total:
            parts.append(
                f"<text x='{x + bar_w / 2:.1f}' y='{y - 4:.1f}' text-anchor='middle' "
                f"class='tick'>{total:,}</text>"
            )
        if i % label_every == 0:
            parts.append(
                f"<text x='{x + bar_w / 2:.1f}' y='{height - 8}' text-anchor='middle' "
                f"class='tick'>{_e(_short(str(b), 10))}</text>"
            )
    if threshold is not None and threshold in bins:
        x = left + bins.index(threshold) * slot
        parts.append(
            f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{top_pad - 6}' y2='{top_pad + plot_h}' "
            f"class='cut'/><text x='{x + 4:.1f}' y='{top_pad - 6}' class='cutlbl'>"
            f"kept ≥ {_e(threshold)}</text>"
        )
    parts.append(
        f"<line x1='{left}' x2='{width - 6}' y1='{top_pad + plot_h}' y2='{top_pad + plot_h}' "
        "class='axis'/>"
    )
    return f"<svg viewBox='0 0 {width} {height}' class='chart' role='img'>{''.join(parts)}</svg>"


def _nice_tick(peak: int) -> int:
    raw = max(peak / 4, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    return int(next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw))


def _hbar(label: str, segments: list[tuple[float, str]], top: float, value: str) -> str:
    """One row of a horizontal bar chart: label (wraps in HTML) | SVG bar | value."""
    return (
        f"<div class='hl' title='{_e(label)}'>{_e(label)}</div>"
        f"<div>{_bar_svg(segments, top, value)}</div><div class='hv'>{_e(value)}</div>"
    )


def _bar_svg(segments: list[tuple[float, str]], top: float, title: str) -> str:
    x, rects = 0.0, []
    for n, fill in segments:
        if n:
            w = max(n / (top or 1) * 100, 0.6)
            rects.append(f"<rect x='{x:.2f}%' y='2' width='{w:.2f}%' height='16' fill='{fill}'/>")
            x += w
    return (
        f"<svg class='bar' width='100%' height='20' role='img'><title>{_e(title)}</title>"
        f"<rect x='0' y='2' width='100%' height='16' class='track'/>{''.join(rects)}</svg>"
    )


def _hbars(rows: list[str]) -> str:
    return f"<div class='hbars'>{''.join(rows)}</div>"


def _figure(title: str, subtitle: str, chart: str) -> str:
    return (
        f"<figure><figcaption><b>{_e(title)}</b><span class='muted'>{_e(subtitle)}</span>"
        f"</figcaption>{chart}</figure>"
    )


def _legend() -> str:
    return f"<div class='legend'>{_swatch(KEPT, 'kept')}{_swatch(HATCH, 'dropped')}</div>"


def _swatch(fill: str, label: str) -> str:
    return (
        f"<span><svg width='14' height='14'><rect width='14' height='14' rx='2' fill='{fill}'/>"
        f"</svg>{_e(label)}</span>"
    )


def _missing(columns: list[str]) -> str:
    if not columns:
        return ""
    return f"<p class='muted'>No values in the rows for: {_e(', '.join(columns))}.</p>"


def _section(title: str, body: str) -> str:
    return f"<section class='card'><h2>{_e(title)}</h2>{body}</section>"


# ---------------------------------------------------------------- formatting


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _enum_text(value: Any) -> str:
    return str(getattr(value, "value", value))


def _int(value: Any, default: int | None = None) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    return int(value)


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _num(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.3g}"


def _compact(n: float) -> str:
    for size, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{suffix}"
    return f"{n:,.0f}"


def _pct(part: int | None, whole: int | None, what: str, *, bare: bool = False) -> str:
    if part is None or not whole:
        return ""
    text = f"{part / whole:.0%}"
    return f" ({text})" if bare else f"{text} {what}".strip()


def _usd(cost: Any) -> str:
    if isinstance(cost, bool) or not isinstance(cost, int | float):
        return "—"
    if cost == 0:
        return "$0"
    return f"${cost:,.4f}" if cost < 1 else f"${cost:,.2f}"


def _per_row(cost: Any, kept: int | None) -> str:
    if isinstance(cost, int | float) and cost and kept:
        return f"{_usd(cost / kept)} per kept row"
    return ""


def _tokens_note(usage: Mapping[str, Any]) -> str:
    i, o = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    return f"{_compact(i or 0)} in · {_compact(o or 0)} out" if usage else ""


def _dropped_note(dropped: int | None, counts: Mapping[str, Any]) -> str:
    for key in ("requested", "generated"):
        whole = _int(counts.get(key))
        if dropped is not None and whole:
            return f"{_share(dropped, whole)} of {key}"
    return ""


def _share(part: float, whole: float) -> str:
    if not whole:
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


HATCH_DEFS = (
    "<svg width='0' height='0' style='position:absolute' aria-hidden='true'><defs>"
    "<pattern id='bg-hatch' width='6' height='6' patternUnits='userSpaceOnUse' "
    f"patternTransform='rotate(45)'><rect width='6' height='6' fill='{DROPPED}'/>"
    "<line x1='0' y1='0' x2='0' y2='6' stroke='#a86f00' stroke-width='2'/></pattern>"
    "</defs></svg>"
)

CSS = """
:root{--ink:#1d2530;--muted:#67727e;--line:#e3e6ea;--bg:#f5f6f8;--card:#fff;--track:#eef0f3}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
 font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",sans-serif}
main{max-width:1120px;margin:0 auto;padding:28px 24px 40px}
h1{font-size:24px;margin:0;letter-spacing:-.01em}
h2{font-size:16px;margin:0 0 14px;letter-spacing:.01em}
h3{font-size:14px;margin:8px 0 4px}
code{font:13px/1.4 ui-monospace,"SFMono-Regular",Menlo,Consolas,"DejaVu Sans Mono",monospace;
 background:var(--track);padding:1px 5px;border-radius:4px;word-break:break-all}
.muted{color:var(--muted);font-weight:400}
header{margin-bottom:18px}
.title{display:flex;align-items:center;gap:12px;margin-bottom:10px}
.badge{font-size:13px;font-weight:600;padding:2px 12px;border-radius:999px;color:#fff;
 text-transform:uppercase;letter-spacing:.05em}
.badge.ok{background:#009E73}.badge.bad{background:#D55E00}.badge.warn{background:#8a6d00}
.facts{display:flex;flex-wrap:wrap;gap:6px 28px;margin:0}
.facts dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.facts dd{margin:0;font-variant-numeric:tabular-nums}
.facts.big{margin-bottom:16px}.facts.big dd{font-size:20px;font-weight:600}
.chips{display:flex;flex-wrap:wrap;gap:8px;margin-top:12px}
.chip{background:var(--card);border:1px solid var(--line);border-radius:999px;padding:2px 12px;
 font-size:13px}
.error{margin-top:12px;padding:10px 14px;border-left:4px solid #D55E00;background:#fdf0e9;
 border-radius:4px;white-space:pre-wrap}
.tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(190px,1fr));gap:14px;
 margin:18px 0}
.tile{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 18px}
.tile .k{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em}
.tile .v{font-size:28px;font-weight:650;font-variant-numeric:tabular-nums;line-height:1.25}
.tile .s{font-size:13px;color:var(--muted);min-height:1.2em}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;
 padding:18px 22px;margin:16px 0;break-inside:avoid}
.chart{width:100%;height:auto;display:block;font-size:11px}
.chart .lbl{font-size:15px;fill:var(--ink)}
.chart .val{font-size:15px;font-weight:600;fill:var(--ink)}
.chart .muted{fill:var(--muted);font-weight:400}
.chart .tick{fill:var(--muted);font-size:11px}
.chart .grid{stroke:var(--line);stroke-width:1}
.chart .axis{stroke:#9aa3ad;stroke-width:1}
.chart .cut{stroke:#D55E00;stroke-width:1.5;stroke-dasharray:4 3}
.chart .cutlbl{fill:#D55E00;font-size:11px;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:18px}
.grid.wide{grid-template-columns:repeat(auto-fill,minmax(480px,1fr))}
figure{margin:0;break-inside:avoid}
figcaption{display:flex;flex-direction:column;margin-bottom:6px;font-size:14px}
figcaption .muted{font-size:12px}
.hbars{display:grid;grid-template-columns:minmax(120px,36%) 1fr auto;gap:6px 12px;
 align-items:center;font-size:13px}
.hl{overflow-wrap:anywhere;line-height:1.3}
.hv{font-variant-numeric:tabular-nums;color:var(--muted);white-space:nowrap;text-align:right}
svg.bar{display:block}
svg.bar .track{fill:var(--track)}
.legend{display:flex;gap:18px;font-size:13px;color:var(--muted);margin:0 0 12px}
.legend span{display:inline-flex;align-items:center;gap:6px}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{text-align:left;padding:6px 10px;border-bottom:1px solid var(--line);vertical-align:top}
th{font-weight:600;color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.num{text-align:right;font-variant-numeric:tabular-nums}
td.barcell{width:34%;vertical-align:middle}
ul{margin:4px 0;padding-left:20px}
ul.paths{list-style:none;padding:0}
details{border:1px solid var(--line);border-radius:8px;padding:8px 12px;margin:8px 0}
summary{cursor:pointer}
table.row{margin:10px 0;font-size:13px;table-layout:fixed}
table.row th{width:180px;text-transform:none;letter-spacing:0;font-size:13px;
 overflow-wrap:anywhere}
table.row td{white-space:pre-wrap;overflow-wrap:anywhere;
 font:12.5px/1.45 ui-monospace,Menlo,Consolas,"DejaVu Sans Mono",monospace}
footer{margin-top:28px;color:var(--muted);font-size:12px;text-align:center}
@media print{body{background:#fff}main{max-width:none;padding:0}
 .card,.tile{border-color:#ccc}details{border:none}details>summary{list-style:none}}
"""
