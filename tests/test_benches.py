"""Every benchmark the README lists runs, at tiny sizes: a benchmark that does not run measures
nothing (`bench/pipeline_throughput.py` once stopped at an ImportError for a whole round).

No figure is asserted (figures are the benchmarks' own report, measured side by side in one
run); only that each exits 0 and prints its table. Each is a subprocess, as a user runs it.
Benchmarks that need what the default install lacks skip, naming it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# (script, tiny arguments, module it needs beyond the default install or None)
QUICK: list[tuple[str, list[str], str | None]] = [
    ("transcript_corpus.py", [], None),
    ("startup.py", ["1"], None),
    ("command_overhead.py", ["2"], None),
    ("ingest_claude_code.py", ["--sizes", "1", "--repeat", "1", "--skip-dd-above", "0"], None),
    ("scrub_throughput.py", ["--sizes", "1", "--variants", "python", "--workers", "1"], None),
    ("pipeline_throughput.py", ["--parallel", "4", "--records", "8", "--repeats", "1"], None),
    (
        "executors.py",
        [
            "--executors",
            "student",
            "--concurrency",
            "1",
            "--tasks-per-lane",
            "1",
            "--latency",
            "0.01",
        ],
        None,
    ),
    ("csv_sandbox.py", ["--quick"], None),
    ("code_graph.py", ["--root", str(ROOT / "core"), "--repeats", "1"], None),
    ("embedding_finetune.py", ["--max-triplets", "16", "--queries", "8"], "torch"),
    ("seed_targets.py", ["--quick"], None),
    ("orchestrator.py", ["--quick"], None),
    ("router.py", ["--quick"], None),
    ("api_websocket.py", ["--quick"], None),
]


def readme_benches() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return set(re.findall(r"python bench/([a-z_]+\.py)", text))


def test_every_benchmark_the_readme_lists_is_run_here():
    """A benchmark added to the README without a quick run here would rot unnoticed."""
    covered = {name for name, _, _ in QUICK} | SEPARATE
    assert readme_benches() - covered == set()


# Not run here: the main job, the embedded model's throughput and the training loop need the
# embedded model for minutes to an hour on 2 cores (tests/test_main_job.py runs the main job;
# the loop also needs torch, the trl plugin's `train` extra). The Ray backend's bench has its
# quick run beside its plugin (plugins/backends/ray/tests/test_bench.py).
SEPARATE = {"main_job.py", "embedded_throughput.py", "loop.py", "ray_backend.py"}


@pytest.mark.slow
@pytest.mark.parametrize(("script", "args", "needs"), QUICK, ids=[q[0] for q in QUICK])
def test_benchmark_runs_at_tiny_sizes(script, args, needs, tmp_path):
    if needs is not None and importlib.util.find_spec(needs) is None:
        pytest.skip(f"{script} needs {needs}, which the default install leaves out")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stderr[-3000:]}"
    assert done.stdout.strip(), f"{script} printed nothing"


def test_benchmarks_that_start_bashgym_let_it_cache_compiled_modules(monkeypatch, capsys):
    """A machine with PYTHONDONTWRITEBYTECODE made every timed command compile its modules from
    source (the 250 MB ingest read 35 MB/s instead of 53): a setting of the machine, not
    BashGym, so the benchmarks that start `bashgym` unset it for their children, and say so."""
    spec = importlib.util.spec_from_file_location("_bytecode", ROOT / "bench" / "_bytecode.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    module.cache_compiled_modules()
    assert "PYTHONDONTWRITEBYTECODE" not in os.environ
    assert "PYTHONDONTWRITEBYTECODE unset" in capsys.readouterr().out
    starts_bashgym = [
        path.name
        for path in (ROOT / "bench").glob("[!_]*.py")
        if re.search(r'"bashgym(_cli)?"|bin/bashgym|BASHGYM\b', path.read_text(encoding="utf-8"))
        and path.name != "seed_targets.py"  # its own --no-bytecode switch (user_env)
    ]
    assert starts_bashgym, "no benchmark found that starts bashgym: the pattern is stale"
    for name in starts_bashgym:
        text = (ROOT / "bench" / name).read_text(encoding="utf-8")
        assert "cache_compiled_modules()" in text, name
