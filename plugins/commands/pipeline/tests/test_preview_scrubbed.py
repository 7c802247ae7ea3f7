"""No secret a model answers reaches the terminal or any file a preview or a validation leaves,
as in a run (README "Secret scrubbing"): the rows shown, the drop reasons, the error line, and
in the folder a failed preview keeps, its log, its failure records and the rows a filter judge
recorded. Real CLI, real DataDesigner, the scripted model server; every token is fresh."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from bashgym_designer.models import model_config
from bashgym_testing.server import Fault, Reply
from bashgym_testing.tokens import github_token

from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions

TOPICS = ["parsers", "caches", "sockets", "queues"]
REDACTED = "[REDACTED:github-token]"


class LeakyOptions(PipelineOptions):
    note_prompt: str = "Note on {{ topic }}"


class Leaky(Pipeline[LeakyOptions]):
    """A structured column, then a text column, one row per topic (a test pipeline)."""

    runner = "datadesigner"
    needs_seed = True

    def build(self, options, run, seed):
        import data_designer.config as dd

        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        schema = {
            "type": "object",
            "properties": {"answer": {"type": "string"}},
            "required": ["answer"],
        }
        builder.add_column(
            dd.LLMStructuredColumnConfig(
                name="s", prompt="Explain {{ topic }}", model_alias="default", output_format=schema
            )
        )
        builder.add_column(
            dd.LLMTextColumnConfig(name="note", prompt=options.note_prompt, model_alias="default")
        )
        return builder

    def example_seed(self, options):
        return pd.DataFrame({"topic": TOPICS})


class LeakyPlugin:
    @hookimpl
    def register_pipelines(self, register):
        register("leaky", Leaky())


@pytest.fixture
def model(register_plugin, scripted_models, model_server, tmp_path, monkeypatch):
    """`model(structured)` scripts the server: `structured[topic]` answers column `s` ("ok",
    "mismatch": JSON of the wrong shape quoting a token, "400": a provider error quoting one),
    every `note` answer quotes a token. Returns the tokens served (a list that fills as the
    server answers). Temporary folders (the preview's own) go under tmp_path/tmp."""
    register_plugin(LeakyPlugin(), "test-leaky")
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setenv("COLUMNS", "1000")  # one line each: a token is never wrapped apart
    served: list[str] = []

    def fresh() -> str:
        served.append(github_token())
        return served[-1]

    def script(structured: dict[str, str]) -> list[str]:
        def explain(request):
            kind = next(k for t, k in structured.items() if t in request.last_user_text)
            if kind == "400":
                return Fault.status(400, {"error": {"message": f"bad key {fresh()}"}})
            if kind == "mismatch":
                return Reply(json.dumps({"answer": {"key": fresh()}}))
            return Reply(json.dumps({"answer": "fine"}))

        model_server.add_rule("^Explain", explain)
        model_server.add_rule("^Note on", lambda _: Reply(f"Push with {fresh()} please"))
        return served

    return script


def leaks(folder: Path, tokens: list[str]) -> list[str]:
    """Each (file, token) where a token is in a file's name or its bytes under `folder`."""
    found = []
    for path in (p for p in folder.rglob("*") if p.is_file()):
        name, text = str(path.relative_to(folder)), path.read_bytes().decode("utf-8", "replace")
        found += [f"{name}: {t[:8]}…" for t in tokens if t in name or t in text]
    return found


def test_preview_shows_a_models_token_redacted_and_leaves_no_file(bashgym_cli, model, tmp_path):
    served = model({"parsers": "ok", "caches": "mismatch", "sockets": "ok", "queues": "mismatch"})

    result = bashgym_cli("preview", "leaky", "-n", "4")

    assert result.exit_code == 0, result.output
    assert len(served) >= 4  # 2 failing structured cells (each try its own) and 4 notes
    assert not [t for t in served if t in result.output]
    text = result.stdout
    assert text.count(f"Push with {REDACTED} please") == 2  # the two rows shown, redacted
    assert "2 of 4 requested rows; dropped: 2 pipeline column s: schema mismatch" in text
    assert not list((tmp_path / "tmp").iterdir())  # its folder is gone
    assert not leaks(tmp_path, served)


def test_preview_whose_every_row_fails_to_parse_is_counted_with_no_token_shown(
    bashgym_cli, model, tmp_path
):
    """Before: DataDesigner's error, quoting an answer's token on the terminal and every one in
    the log it kept (a preview wrote no failure records, so these drops were not countable)."""
    served = model(dict.fromkeys(TOPICS, "mismatch"))

    result = bashgym_cli("preview", "leaky", "-n", "4", "--json")

    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert (doc["generated"], doc["records"]) == (0, [])
    assert doc["dropped"] == {"pipeline column s: schema mismatch": 4}
    assert served and not [t for t in served if t in result.output]
    assert not list((tmp_path / "tmp").iterdir())
    assert not leaks(tmp_path, served)


def test_a_failed_preview_keeps_its_folder_with_no_token_in_it(bashgym_cli, model, tmp_path):
    """Every row lost: one to a provider error quoting a token (a setup failure: the preview
    fails, keeping its folder for the log it names), one to an answer of the wrong shape, and
    the two that generated to a filter judge whose reason quotes a token."""
    served = model({"parsers": "ok", "caches": "400", "sockets": "ok", "queues": "mismatch"})
    reason_token = github_token()
    rules = f'[{{keep = "{{{{ \'Push\' not in note }}}}", reason = "leaks {reason_token}"}}]'

    filter_judge = ["-j", "filter", "--set", f"judge.rules={rules}"]

    result = bashgym_cli("preview", "leaky", "-n", "4", *filter_judge)

    assert result.exit_code == 2, result.output
    tokens = [*served, reason_token]
    assert not [t for t in tokens if t in result.output], result.output
    message = " ".join(result.stderr.split())
    assert message.startswith("error: preview of pipeline 'leaky' failed: ")
    assert f"bad key {REDACTED}" in message  # the log's warnings, quoted redacted
    log = Path(message.rsplit("DataDesigner's log: ", 1)[1].rstrip(")"))
    kept = log.parent.parent
    assert kept.parent == tmp_path / "tmp"
    assert not leaks(tmp_path, tokens), "\n".join(leaks(tmp_path, tokens))
    assert f"bad key {REDACTED}" in log.read_text()
    # the records are there, redacted: the failed cells, and the rows the filter dropped
    dataset = kept / "datadesigner" / "preview-dataset"
    (record,) = dataset.glob("bashgym-failures/rg-*.json")
    failures = json.loads(record.read_text())["failures"]
    assert sorted((column, n) for column, _, n in failures) == [("s", 1), ("s", 1)]
    drops = [json.loads(line) for p in dataset.glob("bashgym-drops/*.jsonl")
             for line in p.read_text().splitlines()]  # fmt: skip
    assert len(drops) == 2
    assert all(d["reason"] == f"leaks {REDACTED}" for d in drops)
    assert all(d["row"]["note"] == f"Push with {REDACTED} please" for d in drops)


def test_validate_prints_no_token_of_the_config(bashgym_cli, model):
    """A token pasted into a prompt's `{{ ... }}` is a missing column to DataDesigner, which
    names it."""
    model({})
    token = github_token()
    prompt = f"Note on {{{{ topic }}}} with {{{{ {token} }}}}"

    result = bashgym_cli("validate", "leaky", "--set", f"pipeline.note_prompt={prompt}")

    assert result.exit_code == 2, result.output
    assert token not in result.output
    assert REDACTED in result.stderr
