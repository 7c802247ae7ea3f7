"""No secret reaches the files this library writes into a run dir: the failure records
(`bashgym-failures/rg-*.json`: a failed cell's raw answers, prompt and error) and the run's log
(`logs/datadesigner.log`: a filter rule that cannot be evaluated is quoted there). README
"Secret scrubbing": secrets never reach any file in a run dir, nor the terminal."""

from __future__ import annotations

import json
from pathlib import Path

import data_designer.config as dd
import pandas as pd
import pytest
from bashgym_scrubbers_secrets.detect import Scrubber
from bashgym_testing.server import Reply
from bashgym_testing.tokens import anthropic_key, github_token

TOPICS = ["parsers", "caches", "sockets", "queues"]
FAILING = ("caches", "queues")  # their answers never parse: each cell is a recorded failure


def pipeline_config(path: Path, prompt_token: str) -> None:
    """One structured column whose prompt (a literal of the config) carries a token."""
    builder = dd.DataDesignerConfigBuilder(
        [dd.ModelConfig(alias="default", model="scripted-default", provider="default")]
    )
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    builder.add_column(
        dd.LLMStructuredColumnConfig(
            name="s",
            prompt=f"Explain {{{{ topic }}}} (our key is {prompt_token})",
            model_alias="default",
            output_format=schema,
        )
    )
    builder.write_config(path)


def run_file(path: Path, seed: Path, config: Path, judges: str = "") -> None:
    path.write_text(
        f"""
[source]
plugin = "files"
path = {json.dumps(str(seed))}

[pipeline]
plugin = "datadesigner-config"
path = {json.dumps(str(config))}
{judges}
[[sinks]]
plugin = "parquet"
"""
    )


def leaks(out: Path, secret_values: list[str]) -> list[str]:
    """Each (file, secret) where a secret is in a file's name or its raw bytes."""
    found = []
    for path in (p for p in out.rglob("*") if p.is_file()):
        name, text = str(path.relative_to(out)), path.read_bytes().decode("utf-8", "replace")
        found += [f"{name}: {s[:8]}…" for s in secret_values if s in name or s in text]
    return found


@pytest.fixture
def scripted_run(bashgym_cli, scripted_models, tmp_path):
    """`start(judges)` runs the pipeline above over TOPICS (`own_process`: as the real command,
    whose terminal is its own stderr); the scripted model answers the
    FAILING topics with text holding a fresh Anthropic key (every try its own), the others
    with valid JSON. Returns (result, run dir, the keys answered, the prompt's token)."""
    answered: list[str] = []

    def answer(request) -> Reply:
        if any(topic in request.last_user_text for topic in FAILING):
            key = anthropic_key()
            answered.append(key)
            return Reply(f"Sure! Call the API with {key} as the key.")
        return Reply(json.dumps({"answer": "fine"}))

    scripted_models.server.add_rule("Explain", answer)
    prompt_token = github_token()
    seed = tmp_path / "seed.jsonl"
    seed.write_text("".join(json.dumps({"topic": t}) + "\n" for t in TOPICS))
    config = tmp_path / "pipeline.yaml"
    pipeline_config(config, prompt_token)

    def start(judges: str = "", *, own_process: bool = False):
        runfile = tmp_path / "run.toml"
        run_file(runfile, seed, config, judges)
        out = tmp_path / "run"
        cli = bashgym_cli.subprocess if own_process else bashgym_cli
        result = cli("run", str(runfile), "-n", str(len(TOPICS)), "--out", str(out))
        return result, out, answered, prompt_token

    return start


@pytest.mark.slow  # a whole DataDesigner run: ~10 s quiet, far more on a busy machine
def test_failure_records_hold_no_secret_but_still_every_failure(scripted_run):
    result, out, answered, prompt_token = scripted_run()

    assert result.exit_code == 0, result.output
    assert answered  # the failing cells' answers each carried a key of their own
    records = sorted((out / "datadesigner" / "dataset" / "bashgym-failures").glob("rg-*.json"))
    assert records, "no failure record was written"
    assert not leaks(out, [*answered, prompt_token]), "\n".join(leaks(out, answered))
    assert not [s for s in [*answered, prompt_token] if s in result.output]

    # the records are all there, redacted: both failed cells, each with its answers and prompt
    docs = [json.loads(p.read_text()) for p in records]
    failures = [f for doc in docs for f in doc["failures"]]
    assert sum(n for _, _, n in failures) == len(FAILING)
    assert {column for column, _, _ in failures} == {"s"}
    raw = [r for doc in docs for r in doc["raw"].get("s", [])]
    assert len(raw) == len(FAILING)
    scrub = Scrubber()
    for record in raw:
        assert record["raw_output"], record  # the answers were kept, redacted
        for text in record["raw_output"]:
            assert text.startswith("Sure! Call the API with [REDACTED:anthropic-api-key]")
        assert scrub.text(prompt_token) in record["prompt"]
        assert any(topic in record["prompt"] for topic in FAILING)
        assert record["error"]
    # the run still accounts for them, and dropped.jsonl shows them (scrubbed)
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["kept"] == len(TOPICS) - len(FAILING)
    dropped = [json.loads(line) for line in (out / "dropped.jsonl").read_text().splitlines()]
    assert len(dropped) == len(FAILING)
    assert all("[REDACTED:anthropic-api-key]" in d["row"]["raw_output"][-1] for d in dropped)
    assert pd.read_parquet(out / "data.parquet")["topic"].tolist() == ["parsers", "sockets"]


@pytest.mark.slow  # a whole DataDesigner run: ~10 s quiet, far more on a busy machine
def test_a_rule_that_cannot_be_evaluated_is_logged_redacted(scripted_run):
    rule_token = github_token()
    keep = f"{{{{ s.answer == 'fine' and no_such_column != '{rule_token}' }}}}"
    judges = f"""
[[judges]]
plugin = "filter"
name = "quality"
rules = [{{keep = {json.dumps(keep)}, reason = "not fine"}}]
"""
    # its own process: in pytest's, a stray warning goes to pytest's log capture, not stderr
    result, out, answered, _ = scripted_run(judges, own_process=True)

    # every row that generated reached the rule and was dropped for it; the rest failed
    assert result.exit_code == 3 and "no rows kept" in result.output, result.output
    assert not leaks(out, [rule_token, *answered]), "\n".join(leaks(out, [rule_token]))
    assert rule_token not in result.output  # nor on the terminal
    log = (out / "logs" / "datadesigner.log").read_text()
    (line,) = [ln for ln in log.splitlines() if "cannot be evaluated" in ln]
    assert "WARNING bashgym_designer.filters.processor: filter 'quality'" in line
    assert Scrubber().text(rule_token) in line and "no_such_column" in line
    summary = json.loads((out / "run.json").read_text())
    dropped = summary["counts"]["dropped"]
    assert sum(n for reason, n in dropped.items() if "not fine (condition failed" in reason) == 2
