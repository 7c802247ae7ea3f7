"""Which run directory a run continues: same config and unfinished, never a live or finished one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bashgym.plugins import PluginHost
from bashgym.resume import (
    RunInUseError,
    choose,
    config_hash,
    input_hash,
    leftovers,
    read_status,
)
from bashgym.runspec import RunSpec, StepSpec, resolve
from bashgym.settings import Settings, settings_model
from bashgym.store import lock_run, owner_token


@pytest.fixture
def setup(tmp_path):
    settings = Settings(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache")
    spec = RunSpec(
        pipeline=StepSpec(plugin="samplers", options={"num_records": 5}),
        sinks=[StepSpec(plugin="parquet")],
    )
    resolved = resolve(spec, PluginHost().registry)
    return settings, resolved


NO_INPUTS = input_hash(None)  # type: ignore[arg-type] -- no source: the empty fingerprint


def write_run(folder: Path, **data) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(data))
    return folder


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_newest_unfinished_run_of_the_same_config_is_continued(setup):
    settings, resolved = setup
    digest = config_hash(resolved, settings)
    runs = settings.runs_dir
    write_run(runs / "20260101-000000-samplers", status="failed", config_hash=digest)
    newest = write_run(
        runs / "20260102-000000-samplers",
        status="running",
        config_hash=digest,
        owner=owner_token(dead_pid()),
    )
    write_run(runs / "20260103-000000-samplers", status="ok", config_hash=digest)
    write_run(runs / "20260104-000000-samplers", status="failed", config_hash="other")
    target = choose(resolved, settings, digest, NO_INPUTS)
    assert target.run_dir == newest and target.resume


def test_a_live_run_is_never_taken_over(setup):
    """A run dir whose lock is held (here by another open lock file: flock locks are per open
    file, so this holds against this process too) is neither resumed nor entered."""
    settings, resolved = setup
    digest = config_hash(resolved, settings)
    live = write_run(
        settings.runs_dir / "20260102-000000-samplers", status="running", config_hash=digest
    )
    holder = lock_run(live, "bashgym run elsewhere")
    assert holder is not None
    target = choose(resolved, settings, digest, NO_INPUTS)
    assert target.run_dir != live and not target.resume
    spec = resolved.spec.model_copy(update={"out": live})
    explicit = type(resolved)(spec, None, resolved.pipeline, [], resolved.sinks)
    with pytest.raises(RunInUseError, match=f"pid {os.getpid()} on .*: bashgym run elsewhere"):
        choose(explicit, settings, digest, NO_INPUTS)
    holder.close()  # the holder ends (a kill -9 drops it the same way): the dir is free again
    again = choose(explicit, settings, digest, NO_INPUTS)
    assert again.run_dir == live and again.resume


def test_fresh_or_another_config_starts_over(setup):
    settings, resolved = setup
    digest = config_hash(resolved, settings)
    out = write_run(settings.runs_dir / "mine", status="failed", config_hash=digest)
    explicit = type(resolved)(
        resolved.spec.model_copy(update={"out": out}), None, resolved.pipeline, [], resolved.sinks
    )
    assert choose(explicit, settings, digest, NO_INPUTS).resume
    fresh = type(resolved)(
        explicit.spec.model_copy(update={"fresh": True}), None, resolved.pipeline, [], []
    )
    assert not choose(fresh, settings, digest, NO_INPUTS).resume
    assert not choose(explicit, settings, "another-config", NO_INPUTS).resume


def test_the_hash_ignores_where_and_how_but_not_what(setup):
    settings, resolved = setup
    digest = config_hash(resolved, settings)
    moved = type(resolved)(
        resolved.spec.model_copy(update={"out": Path("/elsewhere"), "fresh": True}),
        None,
        resolved.pipeline,
        [],
        resolved.sinks,
    )
    assert config_hash(moved, settings) == digest
    # a plugin table's resume_keys are part of the identity: the datadesigner runner's batch size
    tables = PluginHost().registry.settings_tables
    with_tables = settings_model(tuple(sorted(tables.items())))
    loaded = with_tables(**settings.model_dump(exclude_unset=True))
    assert config_hash(resolved, loaded) != digest  # [designer] buffer_size=50 now counts
    bigger = loaded.model_copy(
        update={"designer": loaded.designer.model_copy(update={"buffer_size": 7})}
    )
    assert config_hash(resolved, bigger) not in (digest, config_hash(resolved, loaded))


def test_changed_inputs_never_resume(tmp_path):
    """Same config, but the source file changed since: a new run starts (or `--out` refuses)."""
    settings = Settings(runs_dir=tmp_path / "runs", cache_dir=tmp_path / "cache")
    data = tmp_path / "tasks.csv"
    data.write_text("task\na\nb\n")
    spec = RunSpec(
        source=StepSpec(plugin="files", options={"path": str(data)}),
        sinks=[StepSpec(plugin="parquet")],
    )
    resolved = resolve(spec, PluginHost().registry)
    digest, before = config_hash(resolved, settings), input_hash(resolved)
    old = write_run(
        settings.runs_dir / "20260101-000000-files",
        status="failed",
        config_hash=digest,
        input_hash=before,
    )
    assert choose(resolved, settings, digest, before).run_dir == old
    data.write_text("task\na\nb\nc\n")
    after = input_hash(resolved)
    assert after != before
    target = choose(resolved, settings, digest, after)
    assert target.run_dir != old and not target.resume
    explicit = type(resolved)(resolved.spec.model_copy(update={"out": old}), *_rest(resolved))
    with pytest.raises(RunInUseError, match="other inputs"):
        choose(explicit, settings, digest, after)


def _rest(resolved):
    return resolved.source, resolved.pipeline, resolved.judges, resolved.sinks


def test_a_pipelines_input_files_are_part_of_the_fingerprint(tmp_path):
    from bashgym.contracts import Pipeline, PipelineOptions

    class CsvOptions(PipelineOptions):
        csv: str

    class ReadsCsv(Pipeline[CsvOptions]):
        def build(self, options, run, seed):
            raise AssertionError("not built here")

    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    step = type("S", (), {"obj": ReadsCsv(), "options": CsvOptions(csv=str(data))})()
    resolved = type("R", (), {"source": None, "pipeline": step})()
    before = input_hash(resolved)
    data.write_text("a\n1\n2\n")
    assert input_hash(resolved) != before


def test_leftovers_are_only_files_the_earlier_run_listed_inside_its_folder(tmp_path):
    """A run.json is any folder's to write: what it lists outside the folder, folders, and
    entries of the wrong type are never removed."""
    outside = tmp_path / "precious.txt"
    outside.write_text("keep")
    run_dir = tmp_path / "run"
    (run_dir / "sub").mkdir(parents=True)
    (run_dir / "sub" / "data.jsonl").write_text("{}")
    (run_dir / "report.html").write_text("<p>")
    (run_dir / "link").symlink_to(outside)
    write_run(run_dir / "x", status="ok")  # (a folder to name below)
    listed = {"sink": [str(run_dir / "sub" / "data.jsonl"), str(outside), str(run_dir / "link")],
              "bad": "not-a-list", "dir": [str(run_dir / "sub")]}  # fmt: skip
    (run_dir / "run.json").write_text(
        json.dumps({"outputs": listed, "artifacts": {"report": str(run_dir / "report.html")}})
    )
    found = set(leftovers(run_dir, read_status(run_dir)))
    assert (run_dir / "sub" / "data.jsonl").resolve() in found
    assert (run_dir / "report.html").resolve() in found
    assert outside.resolve() not in found and (run_dir / "sub").resolve() not in found
    (run_dir / "run.json").write_text(json.dumps({"outputs": ["x"], "artifacts": 3}))
    left = {p.name for p in leftovers(run_dir, read_status(run_dir))}
    assert left == {"events.jsonl", "state.db", "state.db-wal", "state.db-shm"}
