"""`bashgym push` of a nemo-jsonl run under any settings file, and with the Hub unreachable.

Real runs, real settings files and the real `bashgym push` (no replaced call): the Hub is an
address on 127.0.0.1 that refuses connections (HF_ENDPOINT, which huggingface_hub reads when it
is imported, so the push runs as a subprocess)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

# the README's own examples of plugin-owned tables: any one made push fail before
PLUGIN_TABLES = '[api]\njobs_dir = "jobs"\n\n[designer]\nbuffer_size = 10\n'


@pytest.fixture
def nemo_run(bashgym_cli, bashgym_env) -> Path:
    """A finished nemo-jsonl run of two prompt/response rows (a train and a val line)."""
    csv = bashgym_env.workdir / "qa.csv"
    pd.DataFrame(
        {"prompt": ["What is 2+2?", "Capital of France?"], "response": ["4", "Paris"]}
    ).to_csv(csv, index=False)
    out = bashgym_env.workdir / "run-qa"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "-k", "nemo-jsonl", "--out", out
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def refusing_hub() -> Iterator[str]:
    """An HF_ENDPOINT nothing answers: a port bound here but never listened on (held till the
    test ends, so no other process takes it), which refuses every connection."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}"


def hub_folders(run_dir: Path) -> list[str]:
    """The folders push laid out (or left half-built) in the run directory."""
    return sorted(p.name for p in run_dir.iterdir() if p.is_dir() and "hf-" in p.name)


def test_push_with_plugin_tables_in_settings_and_the_hub_unreachable(
    bashgym_cli, bashgym_env, nemo_run, refusing_hub
):
    """Before: 'Extra inputs are not permitted' for `[api]`/`[designer]` (the card's context
    was the kernel's bare Settings), a half-built hf-<name>/ left behind; and with the Hub
    unreachable a ~290-line httpx traceback. Now the card is written and the failure to reach
    the Hub is one line naming its address, exit 1."""
    bashgym_env.user_config.parent.mkdir(parents=True, exist_ok=True)
    bashgym_env.user_config.write_text(PLUGIN_TABLES)
    env = {"HF_ENDPOINT": refusing_hub, "HF_TOKEN": "hf_push_s3cr3tvalue"}
    result = bashgym_cli.subprocess("push", str(nemo_run), "--repo", "me/qa", env=env)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: push: cannot reach the Hub ({refusing_hub}): ")
    assert "refused" in lines[0].lower()
    assert "hf_push_s3cr3tvalue" not in result.output
    folder = nemo_run / f"hf-{nemo_run.name}"
    assert hub_folders(nemo_run) == [folder.name]  # laid out whole, nothing half-built beside
    assert "# me/qa" in (folder / "README.md").read_text()
    assert sorted(p.name for p in (folder / "data").iterdir()) == [
        "train-00000-of-00001.jsonl",
        "validation-00000-of-00001.jsonl",
    ]


def test_push_that_cannot_lay_out_the_rows_leaves_no_folder(bashgym_cli, bashgym_env, nemo_run):
    """A settings file with a bad value is the user's to fix: one line, exit 2, and no
    half-built hf-<name>/ (before, its data/ was written before the card failed)."""
    bashgym_env.user_config.parent.mkdir(parents=True, exist_ok=True)
    bashgym_env.user_config.write_text('[designer]\nbuffer_size = "lots"\n')
    env = {"HF_TOKEN": "hf_x", "HF_HUB_OFFLINE": "1"}
    result = bashgym_cli.subprocess("push", str(nemo_run), "--repo", "me/qa", env=env)
    assert result.exit_code == 2, result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "buffer_size" in result.stderr and str(bashgym_env.user_config) in result.stderr
    assert hub_folders(nemo_run) == []
