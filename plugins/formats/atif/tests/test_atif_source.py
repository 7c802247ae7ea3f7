"""The atif source: one file, folders with a pattern, globs, invalid documents reported and
skipped, and the CLI end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bashgym_formats_atif import load_atif
from bashgym_formats_atif.source import AtifInputError, AtifOptions, AtifSource
from bashgym_testing.paths import options_with_path_gone

from bashgym.contracts import RunContext
from bashgym.records import Trace, trace_from_row
from bashgym.settings import Settings

EXAMPLE = Path(__file__).parent / "fixtures" / "atif_example.json"


@pytest.fixture
def run(tmp_path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def traces(run: RunContext, **options) -> list[Trace]:
    return list(AtifSource().open(AtifOptions(**options), run))


@pytest.fixture
def jobs(tmp_path) -> Path:
    """A Harbor-like jobs folder: two trajectories, a config file and a broken trajectory."""
    root = tmp_path / "jobs"
    for name in ("task-a", "task-b", "task-c"):
        (root / name / "agent").mkdir(parents=True)
        (root / name / "config.json").write_text('{"agent": "claude-code", "n_attempts": 1}')
    shutil.copy(EXAMPLE, root / "task-a" / "agent" / "trajectory.json")
    doc = json.loads(EXAMPLE.read_text())
    doc["session_id"] = "second-session"
    (root / "task-b" / "agent" / "trajectory.json").write_text(json.dumps(doc))
    (root / "task-c" / "agent" / "trajectory.json").write_text('{"schema_version": "ATIF-v1.6"')
    return root


def test_one_file(run):
    [trace] = traces(run, path=str(EXAMPLE))
    assert trace == load_atif(EXAMPLE)
    assert trace.id == "c0c2c553-36d7-4310-82f8-400ff646da8a"
    assert trace.provenance.source == "atif"
    assert trace.provenance.source_file == str(EXAMPLE)
    assert [m.role for m in trace.messages] == ["user", "assistant", "tool", "assistant"]
    assert trace.usage.input_tokens == 200 and trace.cost_usd == pytest.approx(0.0012)
    assert run.counts == {"source.files": 1}


def test_folder_reports_and_skips_invalid_documents(run, jobs):
    found = traces(run, path=str(jobs))
    assert [t.id for t in found] == ["c0c2c553-36d7-4310-82f8-400ff646da8a", "second-session"]
    assert run.counts == {"source.files": 2, "source.invalid_files": 4}
    config_note = next(n for n in run.notes if n.startswith(str(jobs / "task-a" / "config.json")))
    assert config_note.endswith("'steps' is missing (an ATIF trajectory is an object with a "
                                "'steps' array)")  # fmt: skip
    broken = str(jobs / "task-c" / "agent" / "trajectory.json")
    assert any(n.startswith(f"{broken}: not a valid ATIF document: ") for n in run.notes)
    assert any("is not JSON" in n for n in run.notes)


def test_pattern_and_glob(run, jobs):
    assert len(traces(run, path=str(jobs), pattern="trajectory.json")) == 2
    assert run.counts["source.invalid_files"] == 1  # config.json files are no longer read
    globbed = traces(run, path=str(jobs / "task-[ab]" / "agent" / "*.json"))
    assert [t.id for t in globbed] == ["c0c2c553-36d7-4310-82f8-400ff646da8a", "second-session"]


def test_nothing_valid_or_nothing_found_is_an_input_error(run, jobs, tmp_path):
    with pytest.raises(AtifInputError, match=r"none of 1 file\(s\) is a valid ATIF document"):
        traces(run, path=str(jobs / "task-c" / "agent" / "trajectory.json"))
    with pytest.raises(ValueError, match="path\n  does not exist"):
        AtifOptions(path=str(tmp_path / "missing.json"))  # before a run folder exists
    with pytest.raises(ValueError, match="nothing matches this glob"):
        AtifOptions(path=str(tmp_path / "missing-*.json"))
    options = options_with_path_gone(AtifOptions, tmp_path / "gone.json", "{}")
    with pytest.raises(AtifInputError, match="no files match"):
        list(AtifSource().open(options, run))
    with pytest.raises(AtifInputError, match=r"pattern \*\.atif"):
        traces(run, path=str(jobs), pattern="*.atif")
    with pytest.raises(ValueError, match="must not be empty"):
        AtifOptions(path="")


def test_cli_run_writes_trace_rows(bashgym_cli, bashgym_env, jobs):
    out = bashgym_env.workdir / "out"
    result = bashgym_cli(
        "run", "--source", "atif", "--set", f"source.path={jobs}",
        "--set", "source.pattern=trajectory.json", "--sink", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table["session_id"]) == ["c0c2c553-36d7-4310-82f8-400ff646da8a", "second-session"]
    first = trace_from_row(table.iloc[0].to_dict())
    assert first == load_atif(jobs / "task-a" / "agent" / "trajectory.json")
    counts = json.loads((out / "run.json").read_text())["counts"]
    assert counts["source.invalid_files"] == 1 and counts["kept"] == 2
