"""report.html: what it says (sections, numbers, escaping), `columns_of` on real DataDesigner
builders and output, and that headless Chromium paints it (a screenshot with charts in it)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import markupsafe
import numpy as np
import pandas as pd
import pytest
from bashgym_commands_report import ReportColumns, columns_of, render_report, write_report
from bashgym_designer.designer import generate
from bashgym_designer.models import model_config, providers_for

from bashgym.records import DroppedRow

CHROMIUM = Path("/usr/bin/chromium")
EVIL = "<script>alert('pwned')</script>"
COLUMNS = ReportColumns(
    samplers=["task_category", "difficulty"],
    judges={"quality": ["correctness", "style"]},
    numbers=["temperature"],
    thresholds={("quality", "correctness"): 3},  # as the config's filter rule says
)
# (task_category, difficulty, correctness, style): the filter keeps correctness >= 3.
ROWS = [
    ("bug fix", "easy", 5, 4),
    ("bug fix", "hard", 4, 4),
    ("bug fix", "easy", 2, 3),
    ("feature", "easy", 4, 5),
    ("feature", "hard", 3, 2),
    ("feature", "hard", 1, 1),
    ("refactor", "easy", 5, 5),
    ("refactor", "easy", 4, 3),
    ("refactor", "hard", 2, 4),
    ("docs", "easy", 3, 4),
    ("docs", "easy", 5, 4),
    (EVIL, "hard", 1, 2),
]


def make_row(i: int, category: str, difficulty: str, correctness: int, style: int) -> dict:
    return {
        "task_category": category,
        "difficulty": difficulty,
        "temperature": round(0.1 + 0.07 * i, 2),
        "solution": f"def f():\n    return {i}  # {EVIL}",
        "quality": {
            "correctness": {"reasoning": f"reason {i} {EVIL}", "score": correctness},
            "style": {"reasoning": "fine", "score": style},
        },
    }


@pytest.fixture
def frames() -> tuple[pd.DataFrame, list[DroppedRow]]:
    kept, dropped = [], []
    for i, spec in enumerate(ROWS):
        row = make_row(i, *spec)
        if spec[2] >= 3:
            kept.append(row)
        else:
            dropped.append(DroppedRow("filter quality", "correctness below 3", row))
    return pd.DataFrame(kept), dropped


def summary_for(kept: pd.DataFrame, dropped: list[DroppedRow]) -> dict:
    return {
        "bashgym_version": "0.1.0",
        "status": "ok",
        "run_dir": f"/runs/20250101-coding-agent-sft-{EVIL}",
        "started_at": "2025-01-01T12:00:00+00:00",
        "ended_at": "2025-01-01T12:03:21+00:00",
        "plugins": {
            "pipeline": {"name": "coding-agent-sft", "from": "bashgym-pipelines-coding-agent-sft"},
            "judge": {"name": "filter", "from": "bashgym-judges-filter"},
            "sink": {"name": EVIL, "from": "third-party"},
        },
        "counts": {
            "requested": 14,
            "generated": 12,
            "kept": len(kept),
            "dropped": {
                "filter quality: correctness below 3": len(dropped),
                "pipeline: generation failed (see logs/datadesigner.log)": 2,
                EVIL: 1,
            },
            "dropped_total": len(dropped) + 3,
        },
        "usage": {
            "input_tokens": 123456,
            "output_tokens": 7890,
            "cache_creation_tokens": 0,
            "cache_read_tokens": 0,
        },
        "usage_by_model": {
            "scripted-default": {"input_tokens": 100000, "output_tokens": 7000, "requests": 14},
            "scripted-judge": {"input_tokens": 23456, "output_tokens": 890, "requests": 12},
        },
        "cost_usd": 0.4321,
        "timings_s": {"source": 0.5, "pipeline": 180.25, "judges": 1.5, "total": 201.0},
        "outputs": {"nemo-jsonl": ["/runs/x/train.jsonl", "/runs/x/validation.jsonl"]},
        "rounds": [
            {"requested": 14, "generated": 10, "kept": 6},
            {"requested": 4, "generated": 2, "kept": 2},
        ],
        "notes": [f"a note {EVIL}"],
    }


def section(page: str, title: str) -> str:
    """The HTML of the section whose heading starts with `title`."""
    match = re.search(rf"<h2>{re.escape(title)}.*?</section>", page, re.DOTALL)
    assert match, f"no section {title!r}"
    return match.group(0)


def test_report_shows_every_section_with_the_right_numbers(frames):
    kept, dropped = frames
    page = render_report(summary_for(kept, dropped), kept=kept, dropped=dropped, columns=COLUMNS)
    for title in (
        "Funnel",
        "Generation rounds",
        "Dropped rows by reason · 7",
        "Judge scores",
        "Sampler distributions",
        "Numeric columns",
        "Token usage and cost",
        "Time per step · 3 min 21 s in all",
        "Outputs",
        "Notes",
        "Examples of dropped rows",
    ):
        assert f"<h2>{title}" in page, title
    funnel = section(page, "Funnel")
    assert "<title>Requested: 14</title>" in funnel and "<title>Kept: 8</title>" in funnel
    # Reasons sorted by count, with their share of all drops.
    drops = section(page, "Dropped rows by reason")
    order = [drops.index(r) for r in ("correctness below 3", "generation failed", "&lt;script")]
    assert order == sorted(order)
    assert "4 (57%)" in drops and "2 (29%)" in drops and "1 (14%)" in drops
    # Score histograms stack kept on dropped; the cut shows where the kept scores start.
    judges = section(page, "Judge scores")
    correctness = judges.split("quality · correctness")[1].split("</figure>")[0]
    for title in ("5: 3 kept", "4: 3 kept", "3: 2 kept", "2: 2 dropped", "1: 2 dropped"):
        assert f"<title>{title}</title>" in correctness, title
    assert "kept ≥ 3" in correctness and "mean kept 4.12" in correctness
    style = judges.split("quality · style")[1].split("</figure>")[0]
    assert "<title>4: 4 kept</title>" in style and "<title>4: 1 dropped</title>" in style
    samplers = section(page, "Sampler distributions")
    assert "2 kept · 1 dropped" in samplers  # bug fix, feature and refactor each lose one
    assert "6 kept · 1 dropped" in samplers and "2 kept · 3 dropped" in samplers  # easy, hard
    assert samplers.index(">bug fix<") < samplers.index(">docs<")  # most rows first
    usage = section(page, "Token usage and cost")
    assert "123,456" in usage and "$0.4321" in usage and "scripted-judge" in usage
    assert "Cache writes" not in usage  # zero cache counts stay out of the way
    assert "0.4321" not in section(page, "Funnel")
    assert "$0.0540 per kept row" in page
    rounds = section(page, "Generation rounds")
    assert "<td class='num'>60%</td>" in rounds and "<td class='num'>100%</td>" in rounds
    assert "3 min 0 s (90%)" in section(page, "Time per step")
    examples = section(page, "Examples of dropped rows")
    assert "4 rows, 3 shown" in examples
    assert "correctness: 2 · reason 2" in examples  # judge verdicts read as lines


def test_row_and_summary_text_is_escaped(frames):
    kept, dropped = frames
    page = render_report(summary_for(kept, dropped), kept=kept, dropped=dropped, columns=COLUMNS)
    assert "<script" not in page.lower()  # the page runs nothing, whatever the rows hold
    escaped = str(markupsafe.escape(EVIL))
    for where in ("Dropped rows by reason", "Sampler distributions", "Notes", "Examples"):
        assert escaped in section(page, where), where
    assert page.count(escaped) >= 6  # run dir, plugin, reason, category, note, row cells


def test_judge_cells_read_the_same_from_dicts_json_text_and_parquet(frames, tmp_path):
    kept, dropped = frames
    summary = summary_for(kept, dropped)

    def judges(frame: pd.DataFrame) -> str:
        page = render_report(summary, kept=frame, dropped=dropped, columns=COLUMNS)
        return section(page, "Judge scores") + section(page, "Sampler distributions")

    as_json = kept.assign(quality=kept["quality"].map(json.dumps))
    kept.to_parquet(tmp_path / "kept.parquet")
    from_parquet = pd.read_parquet(tmp_path / "kept.parquet")
    as_numpy = kept.assign(
        quality=kept["quality"].map(
            lambda q: {k: {**v, "score": np.int64(v["score"])} for k, v in q.items()}
        ),
        difficulty=kept["difficulty"].map(np.str_),
    )
    assert judges(as_json) == judges(kept) == judges(from_parquet) == judges(as_numpy)


def test_failed_and_empty_runs_still_render():
    bare = render_report({}, kept=None, dropped=[], columns=ReportColumns([], {}))
    assert "BashGym run report" in bare and "</html>" in bare
    assert "<h2>Judge scores" not in bare and "<h2>Funnel" not in bare

    failed = render_report(
        {"status": "failed", "error": f"InputError: bad {EVIL}", "counts": {"dropped": {}}},
        kept=None,
        dropped=[DroppedRow("filter x", "too short", {})],
        columns=COLUMNS,
    )
    assert "badge bad" in failed and "Run failed:" in failed
    assert f"InputError: bad {markupsafe.escape(EVIL)!s}" in failed
    # Without counts the drops are counted from the rows given; a row without data says so.
    assert "filter x: too short" in section(failed, "Dropped rows by reason · 1")
    assert "(the row was not recorded)" in failed
    assert "No values in the rows for: quality.correctness" in failed


def test_the_compiled_template_is_cached_and_renders_the_same(frames, tmp_path, monkeypatch):
    from bashgym_commands_report import render

    kept, dropped = frames
    summary = summary_for(kept, dropped)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    render._template.cache_clear()  # this process compiles it (and fills the cache dir)
    first = render_report(summary, kept=kept, dropped=dropped, columns=COLUMNS)
    cached = list((tmp_path / "cache" / "bashgym" / "jinja").glob("report-*.cache"))
    assert cached  # the page and the stylesheet it includes
    render._template.cache_clear()  # as the next command: loaded from the cache dir
    try:
        assert render_report(summary, kept=kept, dropped=dropped, columns=COLUMNS) == first
    finally:
        render._template.cache_clear()  # later tests: the default cache dir again


def test_write_report_replaces_the_file_atomically(frames, tmp_path):
    kept, dropped = frames
    (tmp_path / "report.html").write_text("old")
    path = write_report(
        tmp_path, summary_for(kept, dropped), kept=kept, dropped=dropped, columns=COLUMNS
    )
    assert path == tmp_path / "report.html"
    assert path.read_text(encoding="utf-8").startswith("<!doctype html>")
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # no temp file left


def test_columns_of_sorts_every_column_kind():
    import data_designer.config as dd

    judge = dd.ModelConfig(alias="judge", model="m", provider="p")
    builder = dd.DataDesignerConfigBuilder([judge])
    samplers = [
        ("cat", "category", dd.CategorySamplerParams(values=["a", "b"])),
        (
            "sub",
            "subcategory",
            dd.SubcategorySamplerParams(category="cat", values={"a": ["x"], "b": ["y"]}),
        ),
        ("flag", "bernoulli", dd.BernoulliSamplerParams(p=0.5)),
        ("temperature", "uniform", dd.UniformSamplerParams(low=0.0, high=1.0)),
        ("noise", "gaussian", dd.GaussianSamplerParams(mean=0.0, stddev=1.0)),
        ("uid", "uuid", dd.UUIDSamplerParams()),
    ]
    for name, kind, params in samplers:
        builder.add_column(dd.SamplerColumnConfig(name=name, sampler_type=kind, params=params))
    builder.add_column(dd.ExpressionColumnConfig(name="size", expr="{{ cat }}", dtype="int"))
    builder.add_column(dd.ExpressionColumnConfig(name="text", expr="{{ cat }}!"))
    builder.add_column(
        dd.LLMTextColumnConfig(name="answer", prompt="{{ cat }}", model_alias="judge")
    )
    score = {"options": {5: "good", 1: "bad"}, "description": "d"}
    builder.add_column(
        dd.LLMJudgeColumnConfig(
            name="quality",
            prompt="{{ answer }}",
            model_alias="judge",
            scores=[dd.Score(name="correctness", **score), dd.Score(name="style", **score)],
        )
    )
    assert columns_of(builder) == ReportColumns(
        samplers=["cat", "sub", "flag"],
        judges={"quality": ["correctness", "style"]},
        numbers=["temperature", "noise", "size"],
    )
    assert columns_of(dd.DataDesignerConfigBuilder()) == ReportColumns([], {})


def test_charts_the_rows_a_real_datadesigner_run_generates(scripted_models):
    """Real DataDesigner output (category samplers, an int expression, a scripted judge) charted
    through `columns_of`: every generated row lands in its score bin, kept or dropped."""
    import data_designer.config as dd

    scores = {"easy": 5, "medium": 3, "hard": 1}
    for level, score in scores.items():
        scripted_models.server.add_rule(
            rf"Rate this task: {level}\b",
            f'```json\n{{"correctness": {{"reasoning": "{level}", "score": {score}}}}}\n```',
        )
    run = scripted_models.run_context()
    with run.models:
        builder = dd.DataDesignerConfigBuilder([model_config(run.models.resolve("judge"))])
        for name, values in (("level", list(scores)), ("kind", ["bug", "docs"])):
            params = dd.CategorySamplerParams(values=values)
            builder.add_column(
                dd.SamplerColumnConfig(name=name, sampler_type="category", params=params)
            )
        builder.add_column(
            dd.ExpressionColumnConfig(name="size", expr="{{ level | length }}", dtype="int")
        )
        options = {5: "right", 3: "partly", 1: "wrong"}
        builder.add_column(
            dd.LLMJudgeColumnConfig(
                name="quality",
                prompt="Rate this task: {{ level }}",
                model_alias="judge",
                scores=[dd.Score(name="correctness", description="Right?", options=options)],
            )
        )
        columns = columns_of(builder)
        assert columns == ReportColumns(
            samplers=["level", "kind"], judges={"quality": ["correctness"]}, numbers=["size"]
        )
        result = generate(
            builder,
            num_records=12,
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )
    data = result.dataset
    assert len(data) == 12
    keep = data["quality"].map(lambda q: q["correctness"]["score"] >= 3)
    dropped = [
        DroppedRow("filter quality", "correctness below 3", row)
        for row in data[~keep].to_dict(orient="records")
    ]
    summary = {"status": "ok", "counts": {"generated": 12, "kept": int(keep.sum())}}
    page = render_report(summary, kept=data[keep], dropped=dropped, columns=columns)
    levels = Counter(data["level"])
    judges = section(page, "Judge scores")
    for level, score in scores.items():
        n = levels[level]
        what = "kept" if score >= 3 else "dropped"
        assert (f"<title>{score}: {n} {what}</title>" in judges) == bool(n), level
    assert f"{levels['easy'] + levels['medium']} kept, {levels['hard']} dropped" in judges
    sizes = section(page, "Numeric columns")  # len("easy") == 4, "medium" 6, "hard" 4
    assert f"<title>6: {levels['medium']} kept</title>" in sizes or not levels["medium"]
    assert "12 rows" in sizes
    kinds = section(page, "Sampler distributions")
    assert all(f">{kind}<" in kinds for kind in set(data["kind"]))


def chromium_screenshot(report: Path, tmp_path: Path) -> Path:
    shot = tmp_path / "shot.png"
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home),
        "XDG_CACHE_HOME": str(home),
    }
    proc = subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1200,1600",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    return shot


def near(pixel: tuple[int, int, int], colour: str, tolerance: int = 40) -> bool:
    target = bytes.fromhex(colour.lstrip("#"))
    return all(abs(a - b) <= tolerance for a, b in zip(pixel, target, strict=True))


def test_report_renders_in_headless_chromium(frames, tmp_path):
    if not CHROMIUM.is_file() or not shutil.which(str(CHROMIUM)):
        pytest.skip("needs /usr/bin/chromium (Debian package chromium; .ci/run installs it)")
    from PIL import Image

    kept, dropped = frames
    report = write_report(
        tmp_path, summary_for(kept, dropped), kept=kept, dropped=dropped, columns=COLUMNS
    )
    with Image.open(chromium_screenshot(report, tmp_path)) as image:
        assert image.size == (1200, 1600)
        rgb = image.convert("RGB")
    colours = rgb.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200  # text, charts, shading: not blank
    assert max(n for n, _ in colours) < 0.9 * 1200 * 1600  # no colour fills the page
    counts = Counter(rgb.getdata())
    blue = sum(n for pixel, n in counts.items() if near(pixel, "#0072B2"))
    orange = sum(n for pixel, n in counts.items() if near(pixel, "#E69F00"))
    assert blue > 5000, blue  # funnel and kept bars were painted
    assert orange > 1000, orange  # dropped bars (hatched orange) were painted


def test_bashgym_report_rewrites_the_page_from_the_run_dir(bashgym_cli, repo, monkeypatch):
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "run"
    assert bashgym_cli("run", "examples/slice.toml", "--out", str(out)).exit_code == 0
    page = out / "report.html"
    first = page.read_text()
    assert json.loads((out / "run.json").read_text())["artifacts"]["report"] == str(page)
    page.unlink()
    result = bashgym_cli("report", str(out))
    assert result.exit_code == 0, result.output
    again = page.read_text()
    # the same page from what the run dir holds (only the run's total time moved on since)
    assert len(again.splitlines()) == len(first.splitlines())
    for piece in ("<div class='k'>Kept rows</div><div class='v'>12</div>", "difficulty", "style"):
        assert piece in first and piece in again
    assert bashgym_cli("report", str(out / "nope")).exit_code == 2


def test_report_reads_batches_with_structured_columns(tmp_path):
    """DataDesigner stores a structured column as an Arrow struct whose pandas dtype name
    (`struct<...>[pyarrow]`) pandas cannot parse back: the report still reads the batch."""
    import pyarrow as pa
    from bashgym_commands_report import report_for

    run_dir = tmp_path / "run"
    batches = run_dir / "datadesigner" / "dataset" / "parquet-files"
    batches.mkdir(parents=True)
    struct = pa.array([{"plan": ["read"], "summary": "done"}, {"plan": [], "summary": "ok"}])
    frame = pd.DataFrame(
        {"task": ["a", "b"], "solution": pd.Series(struct, dtype=pd.ArrowDtype(struct.type))}
    )
    frame.to_parquet(batches / "batch_00000.parquet")
    with pytest.raises(TypeError, match="not understood"):
        pd.read_parquet(batches / "batch_00000.parquet")  # what the report used to trip on
    summary = {"status": "ok", "counts": {"requested": 2, "generated": 2, "kept": 2, "dropped": {}}}
    (run_dir / "run.json").write_text(json.dumps(summary))
    page = report_for(run_dir).read_text()
    assert "<div class='k'>Kept rows</div><div class='v'>2</div>" in page
