"""What `pipeline export` and `pipeline list` print where no person reads them whole: output that
is not a terminal is never wrapped (a user copies the paths), and a pipeline that needs an
option says which one to set, in words, not that its build failed."""

from __future__ import annotations

import json

import pytest
from pydantic import Field

from bashgym import hookimpl
from bashgym.contracts import Pipeline, PipelineOptions


def test_export_output_is_not_wrapped_when_it_is_not_a_terminal(
    bashgym_cli, bashgym_env, monkeypatch
):
    monkeypatch.delenv("COLUMNS", raising=False)  # as `| cat` gives: rich's 80 columns
    folder = bashgym_env.workdir / ("a-folder-whose-name-makes-every-path-longer-than-a-line" * 2)
    folder.mkdir()
    config = folder / "sft.yaml"
    result = bashgym_cli("pipeline", "export", "coding-agent-sft", str(config))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [ln for ln in lines if ln != ln.rstrip()] == []  # no trailing spaces
    seed = folder / "sft.seed.parquet"
    assert seed.is_file()
    assert f"  seed rows (example seed of pipeline coding-agent-sft): {seed}" in lines
    assert f"wrote {config}" in lines
    assert f"  providers: {folder / 'sft.dd-home' / 'model_providers.yaml'}" in lines
    notes = [ln for ln in result.stderr.splitlines() if ln.startswith("note: ")]
    assert any(
        n.startswith("note: filter 'coding-agent-sft'") and n.endswith("where it is true")
        for n in notes
    ), notes
    assert len(notes) == len(result.stderr.splitlines()), result.stderr  # each note one line


class _Needed(PipelineOptions):
    corpus: str = Field(description="The folder of documents to read.")


class NeedsCorpus(Pipeline[_Needed]):
    """Needs an option with no words of its own (a test pipeline)."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        raise AssertionError("never built without its corpus")


class _Plugin:
    @hookimpl
    def register_pipelines(self, register):
        register("needs-corpus", NeedsCorpus())


@pytest.fixture
def needs_corpus(register_plugin):
    register_plugin(_Plugin(), "test-needs-corpus")


def test_list_says_what_to_set_for_a_pipeline_that_needs_an_option(
    bashgym_cli, needs_corpus, monkeypatch
):
    listed = bashgym_cli("pipeline", "list", "--json")
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["datadesigner-config"]["needs"] == (
        "set pipeline.path=FILE to a DataDesigner config file (.yaml or .json)"
    )
    assert rows["csv-triangulation"]["needs"] == "set pipeline.csv=PATH to a CSV file"
    assert rows["needs-corpus"]["needs"] == "set pipeline.corpus (the folder of documents to read)"
    assert rows["samplers"]["needs"] is None and rows["samplers"]["error"] is None
    monkeypatch.setenv("COLUMNS", "80")
    table = bashgym_cli("pipeline", "list")
    assert table.exit_code == 0, table.output
    text = " ".join(table.stdout.split())
    for said in (
        "to list them, set pipeline.path=FILE to a DataDesigner config file (.yaml or .json)",
        "to list them, set pipeline.csv=PATH to a CSV file",
        "to list them, set pipeline.corpus (the folder of documents to read)",
    ):
        assert said in text, text
    assert "build failed" not in text and "Field required" not in text, text
