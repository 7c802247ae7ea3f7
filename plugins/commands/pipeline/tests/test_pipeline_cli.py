"""`bashgym pipeline list|export`, `bashgym validate` and `bashgym preview` on the real
DataDesigner engine, against the scripted model server (and the real `data-designer` CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import bashgym_commands_pipeline
import bashgym_scrubbers_secrets
import pandas as pd
import psutil
import pytest
from bashgym_designer.models import model_config
from bashgym_testing.pytest_plugin import CliRunner

from bashgym import hookimpl
from bashgym.contracts import Generated, Judge, Pipeline, PipelineOptions, Runtime
from bashgym.plugins import PluginHost, use_host
from bashgym.records import DroppedRow


class StoryOptions(PipelineOptions):
    prompt: str = "Write one line about {{ topic }}."
    drop_first: bool = False


class Story(Pipeline[StoryOptions]):
    """One LLM line per sampled topic, as chat rows (a test pipeline)."""

    runner = "datadesigner"

    output_format = "chat"

    def build(self, options, run, seed):
        import data_designer.config as dd

        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        builder.add_column(
            dd.SamplerColumnConfig(
                name="topic",
                sampler_type="category",
                params=dd.CategorySamplerParams(values=["git", "bash"]),
            )
        )
        builder.add_column(
            dd.LLMTextColumnConfig(name="answer", prompt=options.prompt, model_alias="default")
        )
        return builder

    def finalize(self, dataset, options, run):
        rows = pd.DataFrame(
            {
                "messages": [
                    [
                        {"role": "user", "content": f"about {topic}"},
                        {"role": "assistant", "content": answer},
                    ]
                    for topic, answer in zip(dataset["topic"], dataset["answer"], strict=True)
                ],
                "meta": [{"topic": t, "tags": ["a", "b"]} for t in dataset["topic"]],
            }
        )
        if options.drop_first and len(rows):  # counted, and handed back whole (a Generated)
            run.drop("story: first row dropped on request")
            first = rows.iloc[0].to_dict()
            return Generated(rows.iloc[1:], [DroppedRow("pipeline story", "first row", first)])
        return rows


class Wrapped(Story):
    """A pipeline whose one-sentence description is wrapped over two docstring lines, as
    csv-triangulation's is: a listing shows it whole.

    A second paragraph that a listing leaves out."""


class Solve(Pipeline):
    """Answers each seed task (needs seed rows; ships an example)."""

    runner = "datadesigner"

    needs_seed = True

    def build(self, options, run, seed):
        import data_designer.config as dd

        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        builder.add_column(
            dd.LLMTextColumnConfig(
                name="solution", prompt="Solve: {{ task }}", model_alias="default"
            )
        )
        return builder

    def example_seed(self, options):
        return pd.DataFrame({"task": ["reverse a list", "count words", "sort a dict"]})


class NeedsInput(Solve):
    """Needs seed rows and ships none."""

    def example_seed(self, options):
        return None


class Broken(Pipeline):
    """Cannot build (a test pipeline)."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        raise RuntimeError("no recipe for this")


class Pythonic(Pipeline):
    """Has a custom column: runs Python, so it cannot be exported."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        import data_designer.config as dd

        @dd.custom_column_generator(required_columns=["n"])
        def double(row):
            row["twice"] = row["n"] * 2
            return row

        builder = dd.DataDesignerConfigBuilder()
        builder.add_column(
            dd.SamplerColumnConfig(
                name="n", sampler_type="category", params=dd.CategorySamplerParams(values=[1, 2])
            )
        )
        builder.add_column(dd.CustomColumnConfig(name="twice", generator_function=double))
        return builder


class LengthJudge(Judge):
    """Adds an expression column with the answer's length."""

    runner = "datadesigner"

    def configure(self, builder, options, run):
        import data_designer.config as dd

        builder.add_column(
            dd.ExpressionColumnConfig(name="answer_length", expr="{{ answer | length }}")
        )


class TestPlugin:
    @hookimpl
    def register_pipelines(self, register):
        register("story", Story())
        register("wrapped", Wrapped())
        register("solve", Solve())
        register("needs-input", NeedsInput())
        register("broken", Broken())
        register("pythonic", Pythonic())

    @hookimpl
    def register_judges(self, register):
        register("length", LengthJudge())


@pytest.fixture
def plugins(register_plugin):
    register_plugin(TestPlugin(), "test-pipelines")


def test_list_shows_columns_and_seed_needs_and_errors(
    bashgym_cli, plugins, scripted_models, monkeypatch
):
    result = bashgym_cli("pipeline", "list", "--json")
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    samplers = rows["samplers"]
    assert [c["name"] for c in samplers["columns"]] == ["task_category", "difficulty"]
    assert samplers["plugin"] == "pipelines-samplers" and samplers["error"] is None
    assert rows["solve"]["needs_seed"] and rows["solve"]["seed_columns"] == ["task"]
    assert [c["name"] for c in rows["solve"]["columns"]] == ["solution"]
    assert rows["story"]["output_format"] == "chat"
    assert rows["broken"]["columns"] == []
    assert rows["broken"]["error"] == "RuntimeError: no recipe for this"
    monkeypatch.setenv("COLUMNS", "80")  # as `| cat` gives: names whole, text wrapped
    listing = bashgym_cli("pipeline", "list")
    assert listing.exit_code == 0, listing.output
    words = listing.stdout.split()
    assert {"samplers", "solve", "story", "broken", "pipelines-samplers"} <= set(words)
    text = " ".join(words)
    assert "task_category, difficulty" in text
    assert "build failed: RuntimeError: no recipe for this" in text


def test_validate_passes_with_judge_columns_and_calls_no_model(
    bashgym_cli, plugins, scripted_models, model_server
):
    result = bashgym_cli("validate", "story", "-j", "length")
    assert result.exit_code == 0, result.output
    assert "valid: 3 columns" in result.stdout
    assert "answer_length" in result.stdout and "judge length" in result.stdout
    assert model_server.completions == []


def test_validate_reports_a_missing_reference_without_calling_a_model(
    bashgym_cli, plugins, scripted_models, model_server
):
    result = bashgym_cli("validate", "story", "--set", "pipeline.prompt=About {{ subject }}.")
    assert result.exit_code == 2
    assert "error:" in result.stderr and "subject" in result.stderr
    assert "Traceback" not in result.output
    assert model_server.completions == []
    as_json = bashgym_cli(
        "validate", "samplers", "--json", "--set", "pipeline.expressions.e={{ x }}"
    )
    assert as_json.exit_code == 2
    doc = json.loads(as_json.stdout)
    assert doc["valid"] is False
    assert doc["problems"] == ["Expression column 'e' references missing column 'x'."]


@pytest.mark.parametrize(
    "args,message",
    [
        (["validate", "sampler"], "unknown pipeline 'sampler'. Did you mean 'samplers'?"),
        (["validate", "samplers", "--set", "pipeline.colour=1"], "colour: unknown option"),
        (["validate", "samplers", "--set", "oops"], "ROLE.KEY=VALUE"),
        (["validate", "needs-input"], "needs seed rows and ships no example seed: pass -s SOURCE"),
        (["preview", "broken"], "pipeline 'broken' failed to build its config: RuntimeError"),
        (["pipeline", "export", "pythonic", "x.yaml"], "column 'twice' is a custom column"),
        (["pipeline", "export", "samplers", "x.toml"], "use a .yaml, .yml or .json file name"),
    ],
)
def test_bad_input_is_one_line_exit_2(bashgym_cli, bashgym_env, plugins, args, message):
    result = bashgym_cli(*args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())
    assert "Traceback" not in result.output
    assert not (bashgym_env.workdir / "x.yaml").exists()


def test_preview_prints_records_from_the_scripted_model(
    bashgym_cli, plugins, scripted_models, model_server
):
    result = bashgym_cli("preview", "story", "-n", "3", "-j", "length")
    assert result.exit_code == 0, result.output
    text = result.stdout
    for i in (1, 2, 3):
        assert f"story record {i} of 3" in text
    assert text.count("assistant:") == 3 and "'tags'" in text
    assert "3 of 3 requested rows; dropped: none" in " ".join(text.split())
    prompts = [r.last_user_text for r in model_server.completions]
    assert sum(p.startswith("Write one line about") for p in prompts) == 3


def test_preview_json_reads_a_source_and_counts_rows_the_pipeline_drops(
    bashgym_cli, plugins, scripted_models, repo
):
    tasks_csv = repo / "examples" / "tasks.csv"
    result = bashgym_cli(
        "preview", "solve", "-n", "2", "--json", "-s", "files", "--set", f"source.path={tasks_csv}"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["seed"] == "source files"
    tasks = list(pd.read_csv(tasks_csv)["task"])
    assert [r["task"] for r in doc["records"]] == tasks[:2]  # ORDERED, as in a run
    assert all(r["solution"] for r in doc["records"])
    dropped = bashgym_cli(
        "preview", "story", "-n", "2", "--json", "--set", "pipeline.drop_first=true"
    )
    assert dropped.exit_code == 0, dropped.output
    doc = json.loads(dropped.stdout)
    assert doc["generated"] == 2 and len(doc["records"]) == 1
    assert doc["dropped"] == {"story: first row dropped on request": 1}
    assert doc["records"][0]["messages"][1]["role"] == "assistant"


def test_export_loads_back_with_its_seed_and_providers(
    bashgym_cli, bashgym_env, plugins, scripted_models
):
    import data_designer.config as dd
    import yaml

    out = bashgym_env.workdir / "out" / "solve.yaml"
    result = bashgym_cli("pipeline", "export", "solve", out)
    assert result.exit_code == 0, result.output
    loaded = dd.DataDesignerConfigBuilder.from_config(out)
    assert [c.name for c in loaded.get_column_configs()] == ["solution"]
    assert [m.alias for m in loaded.model_configs] == ["default"]  # no unused defaults
    seed = loaded.get_seed_config()
    assert seed.source.path == str(out.with_name("solve.seed.parquet").resolve())
    assert list(pd.read_parquet(seed.source.path)["task"]) == [
        "reverse a list",
        "count words",
        "sort a dict",
    ]
    providers = yaml.safe_load((out.parent / "solve.dd-home" / "model_providers.yaml").read_text())
    assert providers == {
        "providers": [
            {
                "name": "default",
                "endpoint": scripted_models.server.openai_base_url.rstrip("/"),
                "provider_type": "openai",
                "api_key": "BASHGYM_SCRIPTED_KEY",
            }
        ]
    }
    command = " ".join(result.stdout.split())
    assert "DATA_DESIGNER_HOME=" in command and f"data-designer create {out} -n 3" in command

    json_out = bashgym_env.workdir / "samplers.json"
    plain = bashgym_cli("pipeline", "export", "samplers", json_out)
    assert plain.exit_code == 0, plain.output
    loaded = dd.DataDesignerConfigBuilder.from_config(json_out)
    assert [c.name for c in loaded.get_column_configs()] == ["task_category", "difficulty"]
    assert loaded.get_seed_config() is None and not Path(f"{json_out}.seed.parquet").exists()


def test_data_designer_cli_runs_the_export_against_the_scripted_server(
    bashgym_cli, bashgym_env, plugins, scripted_models, model_server
):
    exe = Path(sys.executable).with_name("data-designer")
    out = bashgym_env.workdir / "solve.yaml"
    assert bashgym_cli("pipeline", "export", "solve", out).exit_code == 0
    env = {
        **os.environ,
        "DATA_DESIGNER_HOME": str(bashgym_env.workdir / "solve.dd-home"),
        "NEMO_TELEMETRY_ENABLED": "false",
    }
    proc = subprocess.run(
        [str(exe), "preview", str(out), "-n", "2", "--non-interactive"],
        capture_output=True,
        text=True,
        env=env,
        cwd=bashgym_env.root,  # the seed path is absolute: any working directory works
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Preview complete" in proc.stdout
    prompts = [r.last_user_text for r in model_server.completions]
    assert sum(p.startswith("Solve: ") for p in prompts) == 2


class RecordingRuntime(Runtime):
    """Stands in for the embedded runtime and records every attempt to start it."""

    def __init__(self):
        self.started = []

    def serve(self, alias, settings):
        self.started.append(alias)
        raise AssertionError("a model server was started")


@pytest.mark.parametrize("model_line", ["", 'model = "tiny.gguf"'])
def test_validate_and_export_with_embedded_default_start_no_server(bashgym_env, model_line):
    (bashgym_env.workdir / "bashgym.toml").write_text(
        f'[models.default]\nprovider = "embedded"\n{model_line}\n'
    )
    runtime = RecordingRuntime()

    class Plugins(TestPlugin):
        @hookimpl
        def register_runtimes(self, register):
            register("embedded", runtime)

    host = PluginHost(entry_points=False)  # only these plugins: no installed embedded runtime
    host.add(Plugins(), "test-pipelines")
    host.add(bashgym_commands_pipeline, "commands-pipeline")
    host.add(bashgym_scrubbers_secrets, "scrubbers-secrets")
    for name in ("runners-datadesigner", "models-providers"):  # installed plugins, by name
        (plugin,) = entry_points(group="bashgym", name=name)
        host.add(plugin.load(), name)
    cli = CliRunner(bashgym_env, host)
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    started = time.perf_counter()
    previous = use_host(host)
    try:
        valid = cli("validate", "solve")
        exported = cli("pipeline", "export", "solve", "solve.yaml")
    finally:
        use_host(previous)
    assert valid.exit_code == 0, valid.output
    assert exported.exit_code == 0, exported.output
    assert time.perf_counter() - started < 20
    assert runtime.started == []
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children
    assert "bashgym serve" in " ".join(exported.stderr.split())  # says how to serve it


def test_preview_whose_every_row_fails_says_why_in_one_line(
    bashgym_cli, plugins, scripted_models, model_server, tmp_path, monkeypatch
):
    import tempfile

    from bashgym_testing.server import Fault

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the kept run dir lands here
    monkeypatch.setenv("COLUMNS", "1000")  # the log path is not wrapped

    model_server.add_rule("^Write one line", Fault.status(400, {"error": {"message": "bad"}}))
    result = bashgym_cli("preview", "story", "-n", "2")
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("error: preview of pipeline 'story' failed: ")
    assert "Provider message: bad" in message and "column 'answer'" in message
    assert "Traceback" not in result.output
    log = Path(message.rsplit("DataDesigner's log: ", 1)[1].rstrip(")"))
    assert log.is_relative_to(tmp_path)
    assert "answer" in log.read_text()  # the log named is kept, and tells which column failed


def test_help_teaches_with_examples(bashgym_cli):
    for args, phrases in (
        (["preview", "--help"], ["Examples", "bashgym preview samplers -n 3", "--set", "-s"]),
        (["validate", "--help"], ["Examples", "valid: N columns", "--judge"]),
        (["pipeline", "export", "--help"], ["data-designer create", "model_providers.yaml"]),
        (["pipeline", "--help"], ["list", "export"]),
    ):
        result = bashgym_cli(*args)
        assert result.exit_code == 0, result.output
        text = " ".join(result.stdout.split())
        assert all(p in text for p in phrases), (args, text)


def test_every_installed_pipeline_lists_and_validates_without_a_model(bashgym_cli, bashgym_host):
    """The real pipeline plugins, on the default (embedded) alias: no model server starts."""
    children = {p.pid for p in psutil.Process().children(recursive=True)}
    registry = bashgym_host.registry
    # a pipeline with a required option (a config file, a CSV) is listed as needing it
    required = {
        n: [f for f, info in registry.get("pipelines", n).obj.Options.model_fields.items()
            if info.is_required()]
        for n in registry.names("pipelines")
    }  # fmt: skip
    names = [n for n, fields in required.items() if not fields]
    assert "samplers" in names and required["datadesigner-config"] == ["path"]
    listed = json.loads(bashgym_cli("pipeline", "list", "--json").stdout)
    errors = {r["name"]: r["error"] for r in listed}
    for name, fields in required.items():  # (pydantic's "Field required", or the plugin's words)
        if not fields:
            assert errors[name] is None, name
            continue
        assert errors[name].startswith(f"needs options: {fields[0]}: "), (name, errors[name])
        assert "required" in errors[name], (name, errors[name])
    for name in names:
        result = bashgym_cli("validate", name)
        assert result.exit_code == 0, (name, result.output)
        assert "valid: " in result.stdout
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= children


def _dead_endpoint() -> str:
    """An endpoint on a port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_preview_with_the_model_down_says_what_run_says(
    bashgym_cli, plugins, scripted_models, tmp_path, monkeypatch
):
    """Before: `DataDesignerGenerationError: ... failed while running health checks ...`;
    now the run's own line, with the run's exit code (2: the model does not answer at start)."""
    dead = _dead_endpoint()
    monkeypatch.setenv("BASHGYM_MODELS__DEFAULT__ENDPOINT", dead)
    monkeypatch.setenv("COLUMNS", "1000")  # one line each, unwrapped
    run = bashgym_cli("run", "-p", "story", "-n", "1", "-k", "parquet", "--out", tmp_path / "r")
    previewed = bashgym_cli("preview", "story", "-n", "1")
    expected = (
        f"error: model alias 'default' does not answer: connection refused at {dead} "
        "(is the server running?)"
    )
    assert run.exit_code == previewed.exit_code == 2, (run.output, previewed.output)
    assert run.stderr.strip().splitlines()[-1] == expected
    assert previewed.stderr.strip().splitlines() == [expected]
    assert "DataDesigner" not in previewed.output and "Traceback" not in previewed.output


def test_preview_checks_each_called_alias_once_as_a_run_does(
    bashgym_cli, plugins, scripted_models, model_server
):
    """The run's preflight ("Reply with OK.", counted), not DataDesigner's uncounted "Hello!"
    health check as well."""
    result = bashgym_cli("preview", "story", "-n", "2")
    assert result.exit_code == 0, result.output
    prompts = [r.last_user_text for r in model_server.completions]
    assert prompts.count("Reply with OK.") == 1
    assert not any("Hello!" in p for p in prompts)
    assert sum(p.startswith("Write one line about") for p in prompts) == 2


def test_list_shows_each_description_whole_at_80_columns_piped(
    bashgym_cli, plugins, scripted_models, monkeypatch
):
    """Before: the docstring's first line only ("... is wrapped over two docstring lines,
    as"), cut mid-sentence."""
    whole = (
        "A pipeline whose one-sentence description is wrapped over two docstring lines, "
        "as csv-triangulation's is: a listing shows it whole."
    )
    rows = json.loads(bashgym_cli("pipeline", "list", "--json").stdout)
    described = {r["name"]: r["description"] for r in rows}
    assert described["wrapped"] == whole
    for name, text in described.items():  # installed pipelines too: none ends mid-sentence
        assert text.rstrip().endswith((".", "!", "?", ")")), (name, text)
    monkeypatch.setenv("COLUMNS", "80")  # as `| cat` gives
    listing = bashgym_cli("pipeline", "list")
    assert listing.exit_code == 0, listing.output
    assert max(len(line.rstrip()) for line in listing.stdout.splitlines()) <= 80
    assert whole in " ".join(listing.stdout.split())
    assert "A second paragraph" not in listing.stdout
