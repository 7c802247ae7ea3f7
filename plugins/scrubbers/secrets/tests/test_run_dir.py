"""No secret anywhere in the run directory: real `bashgym run`s over a source that plants the
whole corpus in every place a transcript holds text (the prompt, tool-call arguments, tool
outputs, file contents written by tools, the system prompt, plain seed columns), (a) through a
DataDesigner pipeline whose LLM column echoes the seed back from the scripted model server, and
(b) straight to the sinks; then every file under the run dir is read (Parquet, Arrow and SQLite
decoded, the rest as text) and searched for every planted value, raw, JSON- and HTML-escaped."""

from __future__ import annotations

import gzip
import html
import json
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from secrets_corpus import LOOKALIKES, PLANTED, probes, render

from bashgym import hookimpl
from bashgym.contracts import Pipeline, Source
from bashgym.records import Message, ToolCall, Trace, trace_from_row, trace_to_row

SINKS = ["parquet", "nemo-jsonl", "hf-hub"]
ROWS = 2


def planted_trace(i: int) -> Trace:
    """Every planted secret in every location of one transcript."""
    texts = [render(p) for p in PLANTED]
    calls, outputs = [], []
    for j, text in enumerate(texts):
        calls.append(ToolCall(id=f"b{j}", name="Bash", arguments=json.dumps({"command": text})))
        outputs.append(Message(role="tool", tool_call_id=f"b{j}", name="Bash", content=text))
    files = {"file_path": "deploy/.env", "content": "\n".join(texts) + "\n"}
    calls.append(ToolCall(id="w", name="Write", arguments=json.dumps(files)))
    outputs.append(Message(role="tool", tool_call_id="w", name="Write", content="wrote .env"))
    return Trace(
        id=f"planted-{i}",
        system_prompt="Deploy bot. Credentials follow.\n" + "\n".join(texts[:10]),
        messages=[
            Message(role="user", content="Set up the service with:\n" + "\n\n".join(texts)),
            Message(role="assistant", content="On it.", tool_calls=calls),
            *outputs,
            Message(role="user", content="Keep these as they are:\n" + "\n\n".join(LOOKALIKES)),
            Message(role="assistant", content="\n\n".join(LOOKALIKES)),
        ],
    )


class PlantedSource(Source):
    output_format = "traces"

    def open(self, options, run):
        for i in range(ROWS):
            row = trace_to_row(planted_trace(i))
            row["notes"] = "\n\n".join(render(p) for p in PLANTED)
            row["config"] = json.dumps({p.shape: render(p) for p in PLANTED}, indent=2)
            row["lookalikes"] = "\n\n".join(LOOKALIKES)
            yield row


class EchoPipeline(Pipeline):
    """One LLM column whose prompt is the seed's `notes`: the scripted server echoes it."""

    runner = "datadesigner"

    output_format = "traces"

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config

        default = model_config(run.models.resolve("default"))
        builder = dd.DataDesignerConfigBuilder(model_configs=[default])
        builder.add_column(
            dd.LLMTextColumnConfig(
                name="echo", prompt="Repeat this:\n{{ notes }}", model_alias="default"
            )
        )
        return builder


class EchoTracePipeline(EchoPipeline):
    """The same over an executor's rows: the prompt is the whole trace."""

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config

        default = model_config(run.models.resolve("default"))
        builder = dd.DataDesignerConfigBuilder(model_configs=[default])
        builder.add_column(
            dd.LLMTextColumnConfig(
                name="echo", prompt="Summarize:\n{{ trace }}", model_alias="default"
            )
        )
        return builder


class TaskSource(Source):
    """Harmless task prompts: the secrets come from what the agent does."""

    def open(self, options, run):
        for i in range(ROWS):
            yield {"id": f"task-{i}", "prompt": f"Deploy service {i} and show its config."}


class Plugins:
    @hookimpl
    def register_sources(self, register):
        register("planted-everywhere", PlantedSource())
        register("tasks", TaskSource())

    @hookimpl
    def register_pipelines(self, register):
        register("echo-seed", EchoPipeline())
        register("echo-trace", EchoTracePipeline())


# ---- reading every file ----------------------------------------------------------------------


def _cells(table: pa.Table) -> list[str]:
    return [json.dumps(v, default=str) for v in table.to_pylist()]


def _decoded(path: Path, data: bytes) -> list[str]:
    """What a reader of `path` sees besides its bytes: table cells, SQLite values, gunzipped."""
    out = []
    if data[:4] == b"PAR1":
        out += _cells(pq.read_table(path))
    elif data[:6] == b"ARROW1":
        out += _cells(pa.ipc.open_file(path).read_all())
    elif path.suffix == ".arrow":  # datasets' save_to_disk writes the IPC stream format
        out += _cells(pa.ipc.open_stream(path).read_all())
    elif data[:16] == b"SQLite format 3\x00":
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'"):
                out += [repr(row) for row in db.execute(f'SELECT * FROM "{table}"')]
    elif data[:2] == b"\x1f\x8b":
        out.append(gzip.decompress(data).decode("utf-8", errors="replace"))
    return out


def leaks(run_dir: Path) -> dict[str, list[str]]:
    """file -> planted shapes found in it (any probe, raw or escaped)."""
    found: dict[str, list[str]] = {}
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        data = path.read_bytes()
        texts = [data.decode("utf-8", errors="replace"), *_decoded(path, data)]
        blob = "\n".join(texts)
        shapes = [
            p.shape
            for p in PLANTED
            if any(probe in blob or html.escape(probe) in blob for probe in probes(p.secret))
        ]
        if shapes:
            found[str(path.relative_to(run_dir))] = shapes
    return found


def _run(bashgym_cli, out: Path, *args: str, source: str = "planted-everywhere"):
    result = bashgym_cli("run", "-s", source, *args, "--out", out, "--fresh")
    assert result.exit_code == 0, result.output
    return json.loads((out / "run.json").read_text())


def _sink_args() -> list[str]:
    args = []
    for sink in SINKS:
        args += ["-k", sink]
    return args


def _check(out: Path, run: dict) -> None:
    assert run["status"] == "ok"
    every = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    for expected in ("run.json", "events.jsonl", "data.parquet", "report.html"):
        assert expected in every, every
    assert any(f.startswith("nemo-jsonl/") or f.endswith("train.jsonl") for f in every), every
    assert any(f.startswith("hf-") for f in every), every
    assert leaks(out) == {}
    # No false positives: every look-alike reaches the sinks exactly as it was.
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert len(table) == ROWS
    assert set(table["lookalikes"]) == {"\n\n".join(LOOKALIKES)}
    trace = trace_from_row(table.iloc[0])
    assert trace.messages[-1].content == "\n\n".join(LOOKALIKES)
    redacted = run["scrub"]["redacted"]
    assert sum(redacted.values()) >= ROWS * len(PLANTED) * 4  # prompt, args, output, file...


@pytest.mark.slow
def test_no_planted_secret_in_any_file_of_a_run_straight_to_sinks(
    bashgym_cli, bashgym_env, register_plugin
):
    register_plugin(Plugins(), "planted-everywhere")
    out = bashgym_env.workdir / "run-sinks"
    run = _run(bashgym_cli, out, *_sink_args())
    _check(out, run)


@pytest.mark.slow
def test_no_planted_secret_in_any_file_of_a_datadesigner_run(
    bashgym_cli, bashgym_env, register_plugin, scripted_models
):
    register_plugin(Plugins(), "planted-everywhere")
    out = bashgym_env.workdir / "run-dd"
    run = _run(bashgym_cli, out, "-p", "echo-seed", *_sink_args())
    _check(out, run)
    assert any(p.suffix == ".parquet" for p in (out / "datadesigner").rglob("*")), "no batches"
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert "[REDACTED:" in table["echo"][0]  # the model saw placeholders, and echoed them
    requests = scripted_models.server.requests
    assert requests, "the LLM column made no request"
    sent = "\n".join(r.raw_body.decode("utf-8", errors="replace") for r in requests)
    assert [p.shape for p in PLANTED if any(x in sent for x in probes(p.secret))] == []


@pytest.mark.slow
def test_the_leak_check_finds_secrets_when_scrubbing_is_off(
    bashgym_cli, bashgym_env, register_plugin, scripted_models
):
    """The control: the same DataDesigner run unscrubbed leaks into the sinks, the events,
    and DataDesigner's own batches, so `leaks` would have seen a miss."""
    register_plugin(Plugins(), "planted-everywhere")
    config = bashgym_env.workdir / "bashgym.toml"
    config.write_text(config.read_text() + "\n[scrub]\nenabled = false\n")
    out = bashgym_env.workdir / "run-off"
    _run(bashgym_cli, out, "-p", "echo-seed", *_sink_args())
    found = leaks(out)
    shapes = {p.shape for p in PLANTED}
    assert set(found["data.parquet"]) == shapes
    assert any(f.startswith("datadesigner/") and set(v) == shapes for f, v in found.items())
    assert any(f.startswith("hf-") for f in found) and "nemo-jsonl/train.jsonl" in found


AGENT_OUTPUT = "$ cat .env deploy/config.yml\n" + "\n\n".join(render(p) for p in PLANTED)


@pytest.mark.slow
def test_no_agent_output_secret_in_any_file_of_an_executor_run(
    bashgym_cli, bashgym_env, register_plugin, scripted_models
):
    from bashgym_testing import ScriptedExecutor

    executor = ScriptedExecutor()
    for _ in range(ROWS):
        executor.enqueue(AGENT_OUTPUT, write={"deploy/.env": AGENT_OUTPUT})
    register_plugin(executor.plugin(), "scripted-executor")
    register_plugin(Plugins(), "planted-everywhere")
    out = bashgym_env.workdir / "run-agent"
    args = ["-x", "scripted", "-e", "local", "-p", "echo-trace", "-k", "parquet"]
    run = _run(bashgym_cli, out, *args, source="tasks")
    assert run["status"] == "ok"
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert len(table) == ROWS and "[REDACTED:" in table["trace"][0]
    assert leaks(out) == {}
