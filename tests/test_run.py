"""`bashgym run` end to end on the real DataDesigner engine: slice, --plugin, errors, run.json."""

from __future__ import annotations

import json
import secrets
import shutil
import string

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bashgym import hookimpl
from bashgym.contracts import InputError, Judge, Source
from bashgym.events import read_events


@pytest.fixture
def tasks_csv(bashgym_env, repo):
    target = bashgym_env.workdir / "examples"
    target.mkdir()
    shutil.copy(repo / "examples" / "tasks.csv", target / "tasks.csv")
    shutil.copy(repo / "examples" / "slice.toml", target / "slice.toml")
    return target / "tasks.csv"


def read_run(run_dir):
    return json.loads((run_dir / "run.json").read_text())


def test_slice_from_flags_writes_parquet_and_counts(bashgym_cli, bashgym_env, tasks_csv):
    out = bashgym_env.workdir / "r1"
    result = bashgym_cli(
        "run",
        "--source",
        "files",
        "--pipeline",
        "samplers",
        "--sink",
        "parquet",
        "-n",
        "9",
        "--out",
        out,
        "--set",
        f"source.path={tasks_csv}",
        "--set",
        "pipeline.expressions.prompt={{ difficulty }}: {{ task }}",
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert len(table) == 9
    tasks = list(__import__("pandas").read_csv(tasks_csv)["task"])
    assert list(table["task"]) == (tasks * 2)[:9]  # ordered seed sampling wraps around
    assert set(table["difficulty"]) <= {"easy", "medium", "hard"}
    assert all(
        p == f"{d}: {t}"
        for p, d, t in zip(table["prompt"], table["difficulty"], table["task"], strict=True)
    )
    run = read_run(out)
    assert run["status"] == "ok"
    assert run["counts"] == {
        "source.files": 1,
        "source_rows": 6,
        "requested": 9,
        "generated": 9,
        "kept": 9,
        "dropped": {},
        "dropped_total": 0,
        "kept_by_sink": {"parquet": 9},
    }
    assert set(run["timings_s"]) >= {"source", "pipeline", "scrub", "sink parquet", "total"}
    assert run["outputs"] == {"parquet": [str(out / "data.parquet")]}


def test_run_file_equals_flags_and_resolved_config_reruns(bashgym_cli, bashgym_env, tasks_csv):
    out = bashgym_env.workdir / "from-file"
    result = bashgym_cli("run", "examples/slice.toml", "--out", out, "--set", "sink.shard_rows=5")
    assert result.exit_code == 0, result.output
    shards = sorted((out / "parquet").glob("*.parquet"))
    assert [len(pq.read_table(s)) for s in shards] == [5, 5, 2]
    rows = pq.read_table(out / "parquet").to_pandas()
    assert rows["prompt"].str.match(r"^\[(easy|medium|hard), (terse|detailed)\] ").all()
    # The resolved run.toml carries every option and runs again as-is.
    resolved = (out / "run.toml").read_text()
    assert "shard_rows = 5" in resolved and 'compression = "zstd"' in resolved
    again = bashgym_cli("run", out / "run.toml", "--out", bashgym_env.workdir / "again")
    assert again.exit_code == 0, again.output
    assert read_run(bashgym_env.workdir / "again")["counts"]["kept"] == 12


def test_source_straight_to_sink_without_pipeline(bashgym_cli, bashgym_env, tasks_csv):
    out = bashgym_env.workdir / "plain"
    result = bashgym_cli(
        "run",
        "-s",
        "files",
        "-k",
        "parquet",
        "-n",
        "4",
        "--out",
        out,
        "--set",
        f"source.path={tasks_csv}",
        "--set",
        "source.map.prompt=task",
        "--set",
        'source.columns=["prompt"]',
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table.columns) == ["prompt", "source_file", "source_row"]
    assert len(table) == 4


LOCAL_PIPELINE = '''
from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions

class MineOptions(PipelineOptions):
    shout: bool = False

class Mine(Pipeline[MineOptions]):
    """A pipeline that lives in one file, never installed."""
    runner = "datadesigner"
    def build(self, options, run, seed):
        import data_designer.config as dd
        builder = dd.DataDesignerConfigBuilder()
        builder.add_column(dd.SamplerColumnConfig(
            name="colour", sampler_type="category",
            params=dd.CategorySamplerParams(values=["red", "blue"])))
        text = "{{ colour | upper }}" if options.shout else "{{ colour }}"
        builder.add_column(dd.ExpressionColumnConfig(name="said", expr=text))
        return builder

@hookimpl
def register_pipelines(register):
    register("mine", Mine())
'''


def test_plugin_flag_loads_a_local_py_file_for_one_run(bashgym_cli, bashgym_env):
    (bashgym_env.workdir / "my_pipeline.py").write_text(LOCAL_PIPELINE)
    out = bashgym_env.workdir / "mine"
    result = bashgym_cli(
        "run",
        "--plugin",
        "my_pipeline.py",
        "--pipeline",
        "mine",
        "--sink",
        "parquet",
        "-n",
        "6",
        "--set",
        "pipeline.shout=true",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert len(table) == 6 and set(table["said"]) <= {"RED", "BLUE"}
    assert read_run(out)["plugins"]["pipeline"] == {"name": "mine", "from": "my_pipeline"}


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--source", "filez", "--sink", "parquet"],
            "unknown source 'filez'. Did you mean 'files'?",
        ),
        (["--pipeline", "samplers", "--sink", "parquett"], "Did you mean 'parquet'? Valid sinks: "),
        (
            ["--pipeline", "samplers", "--sink", "parquet", "--set", "pipeline.colour=1"],
            "pipeline 'samplers': colour: unknown option",
        ),
        (
            [
                "--pipeline",
                "samplers",
                "--sink",
                "parquet",
                "--set",
                "pipeline.weights={difficulty=[1]}",
            ],
            "'difficulty' has 3 values but 1 weights",
        ),
        (["--pipeline", "samplers"], "needs at least one sink"),
        (["missing.toml"], "run file 'missing.toml' does not exist"),
        (["--plugin", "nowhere.py", "--pipeline", "x", "--sink", "parquet"], "does not exist"),
        (["--pipeline", "samplers", "--sink", "parquet", "--set", "oops"], "ROLE.KEY=VALUE"),
    ],
)
def test_bad_config_fails_before_any_work_with_exit_2(bashgym_cli, bashgym_env, args, message):
    result = bashgym_cli("run", *args, "--out", bashgym_env.workdir / "never")
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not (bashgym_env.workdir / "never").exists()


class DropOddRows(Judge):
    """Drops rows whose source_row is odd (a rule with a reason)."""

    def verdicts(self, dataset, options, run):
        return dataset["source_row"].map(lambda r: "odd row" if r % 2 else None)


class Observer:
    def __init__(self):
        self.summaries = []

    @hookimpl
    def register_judges(self, register):
        register("odd", DropOddRows())

    @hookimpl
    def on_run_end(self, summary, run):
        self.summaries.append(summary)


def test_judges_drop_with_reasons_and_lifecycle_hooks_observe(
    bashgym_cli, bashgym_env, register_plugin, tasks_csv
):
    observer = Observer()
    register_plugin(observer, "observer")
    out = bashgym_env.workdir / "judged"
    result = bashgym_cli(
        "run",
        "-s",
        "files",
        "-p",
        "samplers",
        "-j",
        "odd",
        "-k",
        "parquet",
        "--set",
        f"source.path={tasks_csv}",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    run = read_run(out)
    assert run["counts"]["generated"] == 6 and run["counts"]["kept"] == 3
    assert run["counts"]["dropped"] == {"judge odd: odd row": 3}
    kept = pd.concat(pd.read_parquet(p) for p in sorted(out.glob("*.parquet")))
    assert sorted(kept["source_row"]) == [0, 2, 4]
    assert observer.summaries[0]["counts"]["kept"] == 3


class Exploding(Source):
    def open(self, options, run):
        raise RuntimeError("disk on fire")


def test_a_crash_leaves_run_json_with_the_error(bashgym_cli, bashgym_env, register_plugin):
    add_source(register_plugin, "boom", Exploding())
    out = bashgym_env.workdir / "crashed"
    with pytest.raises(RuntimeError, match="disk on fire"):
        bashgym_cli("run", "-s", "boom", "-k", "parquet", "--out", out)
    run = read_run(out)
    assert run["status"] == "failed" and run["error"] == "RuntimeError: disk on fire"


class Refusing(Source):
    def open(self, options, run):
        raise InputError("rows.csv has no column 'prompt'")


def test_a_refused_input_is_in_run_json_in_words_without_a_class_name(
    bashgym_cli, bashgym_env, register_plugin
):
    """run.json's error (and report.html's "Run failed") read `InputError: rows.csv …`; a
    user's mistake is said as the terminal says it. A crash keeps its type (above): news."""

    add_source(register_plugin, "refusing", Refusing())
    out = bashgym_env.workdir / "refused"
    result = bashgym_cli("run", "-s", "refusing", "-k", "parquet", "--out", out)
    assert result.exit_code == 2, result.output
    run = read_run(out)
    assert run["status"] == "failed" and run["error"] == "rows.csv has no column 'prompt'"


def test_a_run_started_over_in_another_runs_folder_says_so_and_clears_its_files(
    bashgym_cli, bashgym_env, tasks_csv
):
    """`--out` naming a finished run's folder with another config: the earlier run's outputs
    go (no stale data.parquet beside the new sink's files, no report built from both) and the
    run says it replaced one; files the earlier run did not list stay."""
    out = bashgym_env.workdir / "again"
    source = ["-s", "files", "--set", f"source.path={tasks_csv}"]
    first = bashgym_cli("run", "examples/slice.toml", "--out", out)  # samplers → parquet
    assert first.exit_code == 0, first.output
    assert (out / "data.parquet").is_file() and "Sampler distributions" in read_report(out)
    (out / "mine.txt").write_text("the user's")
    second = bashgym_cli("run", *source, "-k", "hf-hub", "--out", out)
    assert second.exit_code == 0, second.output
    said = second.output.index("WARNING replaced the earlier run")  # at once, not at the end
    assert said < second.output.index("sink hf-hub"), second.output
    assert not (out / "data.parquet").exists() and (out / "mine.txt").read_text() == "the user's"
    run = read_run(out)
    assert list(run["outputs"]) == ["hf-hub"] and any("replaced" in n for n in run["notes"])
    assert "Sampler distributions" not in read_report(out)  # the samplers run's batches


def add_source(register_plugin, name: str, source: Source) -> None:
    """Register `source` as `name` (in a plugin `NAME-plugin`) for this test."""

    class Plugin:
        @hookimpl
        def register_sources(self, register):
            register(name, source)

    register_plugin(Plugin(), f"{name}-plugin")


def read_report(out):
    return (out / "report.html").read_text()


class LeakySource(Source):
    """Names a token where a user would not look: a count, a drop's row id, an error."""

    token = "ghp_" + "".join(secrets.choice(string.ascii_letters + string.digits) for _ in "x" * 36)

    def open(self, options, run):
        run.count(f"source.attachments.{self.token}")
        run.drop("unreadable", row_id=f"/data/{self.token}/session.jsonl")
        raise InputError(f"source: nothing matches '/data/{self.token}/*.jsonl'")


def test_a_failed_run_says_its_error_redacted_everywhere(bashgym_cli, bashgym_env, register_plugin):
    add_source(register_plugin, "leaky", LeakySource())
    out = bashgym_env.workdir / "leaky"
    result = bashgym_cli("run", "-s", "leaky", "-k", "parquet", "--out", out)
    assert result.exit_code == 2, result.output
    token = LeakySource.token
    assert "nothing matches '/data/[REDACTED:github-token]/*.jsonl'" in result.output
    assert token not in result.output
    for path in out.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    run = read_run(out)
    assert run["status"] == "failed" and "[REDACTED:github-token]" in run["error"]


class NoisySource(Source):
    """Notes every row it reads (as a transcript reader notes bad lines)."""

    def open(self, options, run):
        for i in range(250):
            run.note(f"input.jsonl:{i}: truncated line")
        return [{"x": 1}]


def test_source_notes_reach_run_json_capped(bashgym_cli, bashgym_env, register_plugin):
    add_source(register_plugin, "noisy", NoisySource())
    out = bashgym_env.workdir / "noisy"
    result = bashgym_cli("run", "-s", "noisy", "-k", "parquet", "--out", out)
    assert result.exit_code == 0, result.output
    notes = read_run(out)["notes"]
    assert notes[0] == "input.jsonl:0: truncated line" and len(notes) == 201
    assert notes[-1] == "... and 50 more"
    logged = [e for e in read_events(out / "events.jsonl") if e.type == "note"]
    assert len(logged) == 250  # every note is an event, not only a line in run.json
    # the terminal shows the first few and points to the rest
    assert "note: input.jsonl:0: truncated line" in result.output
    assert "note: input.jsonl:5: truncated line" not in result.output
    assert "note: 196 more in run.json" in result.output


def test_run_help_teaches(bashgym_cli):
    result = bashgym_cli("run", "--help")
    assert result.exit_code == 0
    text = " ".join(result.stdout.split())
    for phrase in ("--plugin", "ROLE.KEY=VALUE", "bashgym plugins", "bashgym options ROLE NAME"):
        assert phrase in text


def test_map_flag_renames_source_columns(bashgym_cli, bashgym_env, tasks_csv):
    out = bashgym_env.workdir / "mapped"
    result = bashgym_cli(
        "run",
        "-s",
        "files",
        "-k",
        "parquet",
        "--map",
        "prompt=task",
        "--map",
        "lang=language",
        "--set",
        f"source.path={tasks_csv}",
        "--out",
        out,
    )
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert {"prompt", "lang"} <= set(table.columns) and "task" not in table.columns
    bad = bashgym_cli(
        "run",
        "-s",
        "files",
        "-k",
        "parquet",
        "--map",
        "p=nope",
        "--set",
        f"source.path={tasks_csv}",
        "--out",
        out / "x",
    )
    assert bad.exit_code == 2
    assert "column(s) ['nope'] not found" in bad.output and "Traceback" not in bad.output
    assert json.loads((out / "x" / "run.json").read_text())["status"] == "failed"


@pytest.mark.parametrize("pair", ["=question", "prompt=", "prompt", " =x"])
def test_a_map_without_both_names_is_refused(bashgym_cli, bashgym_env, tasks_csv, pair):
    """`--map =question` once wrote a column named ''; nothing runs with a half-given pair."""
    out = bashgym_env.workdir / "m"
    args = ["-s", "files", "-k", "parquet", "--set", f"source.path={tasks_csv}"]
    result = bashgym_cli("run", *args, "--map", pair, "--out", out)
    assert result.exit_code == 2, result.output
    assert "write NEW=OLD" in result.output and not out.exists()


def test_scrubbing_on_without_its_scrubber_refuses_to_write(bashgym_cli, repo, monkeypatch):
    monkeypatch.chdir(repo)
    monkeypatch.setenv("BASHGYM_SCRUB__SCRUBBERS", '["not-installed"]')
    out = bashgym_cli.env.root / "run"
    result = bashgym_cli("run", "examples/slice.toml", "--out", str(out))
    assert result.exit_code == 2
    assert "scrubber 'not-installed' is not installed" in result.output
    assert not out.exists()  # refused before anything was written


def test_an_unwritable_out_is_one_line(bashgym_cli, repo, monkeypatch, tmp_path):
    monkeypatch.chdir(repo)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = bashgym_cli("run", "examples/slice.toml", "--out", str(blocker / "run"))
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot write the run directory")
    assert "Traceback" not in result.output
    # the OS's reason in words, not `[Errno 20] Not a directory: '...'` (path said twice)
    assert result.output.rstrip().endswith("/run': Not a directory"), result.output
    assert "Errno" not in result.output


class DropAll:
    @hookimpl
    def register_judges(self, register):
        from bashgym.contracts import Judge

        class Nope(Judge):
            def verdicts(self, dataset, options, run):
                import pandas as pd

                return pd.Series(["never good enough"] * len(dataset), index=dataset.index)

        register("drop-all", Nope())


def test_a_run_that_keeps_nothing_is_not_ok(bashgym_cli, register_plugin, repo, monkeypatch):
    register_plugin(DropAll(), "drop-all-plugin")
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "run"
    result = bashgym_cli("run", "examples/slice.toml", "-j", "drop-all", "--out", str(out))
    assert result.exit_code == 3
    assert "12 × judge drop-all: never good enough" in result.stderr
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "empty" and summary["counts"]["kept"] == 0
    assert "Top drop reasons: 12 × judge drop-all: never good enough" in summary["warning"]
    page = (out / "report.html").read_text()
    assert "badge bad'>empty" in page and "never good enough" in page


def test_a_run_is_empty_only_when_no_sink_wrote_a_row(bashgym_cli, tmp_path):
    """nemo-jsonl refuses a session with no user turn; Parquet writes it: the run kept rows
    (it used to end `empty`, exit 3, judged by the sink that wrote the fewest)."""
    session = {"type": "assistant", "uuid": "a1", "sessionId": "s1",
               "timestamp": "2026-05-01T10:00:00Z",
               "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4-5",
                           "content": [{"type": "text", "text": "hello"}],
                           "usage": {"input_tokens": 10, "output_tokens": 2}}}  # fmt: skip
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "s1.jsonl").write_text(json.dumps(session) + "\n")
    out = tmp_path / "run"
    result = bashgym_cli("run", "-s", "claude-code", "--set", f"source.path={corpus}",
                         "-k", "nemo-jsonl", "-k", "parquet", "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = read_run(out)
    assert summary["status"] == "ok"
    assert summary["counts"]["nemo-jsonl.train"] == 0
    assert summary["counts"]["kept_by_sink"] == {"nemo-jsonl": 0, "parquet": 1}
    # which file each dropped row came from, so a user can find what was left out
    (reason,) = summary["counts"]["dropped"]
    assert summary["dropped_rows"] == {reason: [str(corpus / "s1.jsonl")]}
    assert "0 kept in nemo-jsonl and 1 in parquet" in " ".join(result.output.split())
    assert len(pq.read_table(out / "data.parquet")) == 1


def test_a_run_that_got_no_rows_says_what_the_source_counted(bashgym_cli, repo, monkeypatch):
    """A source that filtered every session out: the warning gives its counts, not a bare
    "no rows came in" that leaves the user to find `source.filtered.since` in run.json."""
    monkeypatch.chdir(repo)
    out = bashgym_cli.env.root / "run"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", "source.path=examples/transcripts",
        "--set", "source.since=2030-01-01", "-k", "nemo-jsonl", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 3
    summary = json.loads((out / "run.json").read_text())
    filtered = summary["counts"]["source.filtered.since"]
    assert filtered > 0
    assert f"no rows came in (source.filtered.since {filtered})" in summary["warning"]
    assert "nemo-jsonl.train 0" not in summary["warning"]  # counts of nothing are left out
