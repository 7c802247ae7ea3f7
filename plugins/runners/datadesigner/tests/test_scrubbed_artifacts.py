"""No secret reaches DataDesigner's working files under RUN_DIR/datadesigner: not a model's
answer, not a sampler expression's output, not a filter judge's name, rule or reason from the
run file (README "Secret scrubbing": secrets never reach any file in a run dir)."""

from __future__ import annotations

import json
from pathlib import Path

import data_designer.config as dd
import pandas as pd
import pytest
from bashgym_scrubbers_secrets.detect import Scrubber
from bashgym_testing.server import Reply
from bashgym_testing.tokens import anthropic_key, github_token, openai_key, random_text

TOPICS = ["parsers", "caches", "sockets", "caches"]  # the filter drops the two 'caches' rows


def answer_text(key: str) -> str:
    return f"Set it up, then call the API with {key} as the key."


def pipeline_config(path: Path) -> None:
    """Seed columns `topic` and `suffix`; an expression that makes a full GitHub token from
    the (harmless) suffix; an LLM column the scripted model answers with an Anthropic key."""
    builder = dd.DataDesignerConfigBuilder(
        [dd.ModelConfig(alias="default", model="scripted-default", provider="default")]
    )
    builder.add_column(
        dd.ExpressionColumnConfig(name="cmd", expr="export GITHUB_TOKEN=ghp_{{ suffix }}")
    )
    builder.add_column(
        dd.LLMTextColumnConfig(name="answer", prompt="Explain {{ topic }}", model_alias="default")
    )
    builder.write_config(path)


def run_file(path: Path, seed: Path, config: Path, name: str, keep: str, reason: str) -> None:
    path.write_text(
        f"""
[source]
plugin = "files"
path = {json.dumps(str(seed))}

[pipeline]
plugin = "datadesigner-config"
path = {json.dumps(str(config))}

[[judges]]
plugin = "filter"
name = {json.dumps(name)}
rules = [{{keep = {json.dumps(keep)}, reason = {json.dumps(reason)}}}]

[[sinks]]
plugin = "parquet"
"""
    )


def texts_of(path: Path) -> list[str]:
    """What a file holds, as text: its bytes, and every cell of a parquet file as read back."""
    out = [path.read_bytes().decode("utf-8", "replace")]
    if path.suffix == ".parquet":
        frame = pd.read_parquet(path)
        out.append(frame.to_json(orient="records", default_handler=str))
        out.append(" ".join(map(str, frame.columns)))
    return out


@pytest.mark.slow  # a whole DataDesigner run: ~10 s quiet, far more on a busy machine
def test_no_secret_reaches_a_file_of_the_run_dir(bashgym_cli, scripted_models, tmp_path):
    name_token, reason_token, rule_key = github_token(), github_token(), openai_key()
    suffixes = [random_text(36) for _ in TOPICS]
    answered: list[str] = []

    def answer(_request) -> Reply:  # a fresh key in every answer
        key = anthropic_key()
        answered.append(key)
        return Reply(answer_text(key))

    scripted_models.server.add_rule("Explain", answer)
    seed = tmp_path / "seed.jsonl"
    seed_rows = zip(TOPICS, suffixes, strict=True)
    seed.write_text("".join(json.dumps({"topic": t, "suffix": s}) + "\n" for t, s in seed_rows))
    config = tmp_path / "pipeline.yaml"
    pipeline_config(config)
    keep = f"{{{{ topic != 'caches' and topic != '{rule_key}' }}}}"
    runfile = tmp_path / "run.toml"
    run_file(runfile, seed, config, name_token, keep, f"token {reason_token} rejected")
    out = tmp_path / "run"

    result = bashgym_cli("run", str(runfile), "-n", str(len(TOPICS)), "--out", str(out))

    assert result.exit_code == 0, result.output
    assert len(answered) == len(TOPICS)  # every row's answer carried a key of its own
    leaked = [name_token, reason_token, rule_key, *answered]
    leaked += [f"ghp_{s}" for s in suffixes]  # the expression's full tokens
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.match("datadesigner/*/parquet-files/*.parquet") for p in files)
    assert any(p.match("datadesigner/*/bashgym-drops/*.jsonl") for p in files)
    found = [
        (str(p.relative_to(out)), secret[:8])
        for p in files
        for secret in leaked
        if secret in str(p.relative_to(out)) or any(secret in t for t in texts_of(p))
    ]
    assert not found, "\n".join(f"{f}: {s}…" for f, s in found)

    # the data is what it was: the same rows and values, each secret a placeholder
    scrub = Scrubber()
    rows = pd.read_parquet(out / "data.parquet")
    assert rows["topic"].tolist() == ["parsers", "sockets"]
    assert rows["suffix"].tolist() == [suffixes[0], suffixes[2]]
    assert rows["cmd"].tolist() == [scrub.text("export GITHUB_TOKEN=ghp_" + suffixes[0])] * 2
    assert rows["answer"].tolist() == [scrub.text(answer_text(answered[0]))] * 2
    assert "[REDACTED:anthropic-api-key]" in rows["answer"][0]  # the key was found at all
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["kept"] == 2
    reason = scrub.text(f"filter {name_token}: token {reason_token} rejected")
    assert summary["counts"]["dropped"] == {reason: 2}
    # the drop record: one file, named after the redacted filter name, one line a dropped row
    (drops,) = (out / "datadesigner" / "dataset" / "bashgym-drops").glob("*.jsonl")
    assert drops.name == "filter_" + scrub.text(name_token) + ".jsonl"
    lines = [json.loads(line) for line in drops.read_text().splitlines()]
    assert [line["row"]["topic"] for line in lines] == ["caches", "caches"]
