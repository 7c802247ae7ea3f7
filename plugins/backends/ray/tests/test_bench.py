"""`bench/ray_backend.py --quick` runs (tiny sizes): a benchmark that does not run measures
nothing. Its figures are its own report; here only that it ends well and prints each table."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[4]
BENCH = ROOT / "bench" / "ray_backend.py"


@pytest.mark.slow
@pytest.mark.timeout(600)  # a dozen Ray runs, each warming its slots: minutes on a busy box
def test_the_ray_benchmark_runs_at_tiny_sizes(tmp_path):
    if not BENCH.is_file():
        pytest.skip(f"{BENCH} is not in this checkout")
    out = tmp_path / "figures.json"
    # a short TMPDIR: Ray's socket paths under a pytest tmp dir (an xdist worker's most of all)
    # pass AF_UNIX's 107 bytes
    short = Path(tempfile.mkdtemp(prefix="bgr-", dir="/tmp"))
    env = {**os.environ, "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0", "TMPDIR": str(short)}
    try:
        done = subprocess.run(
            [sys.executable, str(BENCH), "--quick", "--json", str(out)],
            capture_output=True, text=True, env=env, timeout=600, cwd=short,
        )  # fmt: skip
    finally:
        shutil.rmtree(short, ignore_errors=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "agent  conc 4, 1 slot(s) x 4" in done.stdout
    assert "generation ray 2 shards" in done.stdout
    assert "16 nodes x" in done.stdout
    figures = json.loads(out.read_text())
    assert [(r["slots"], r["slot_tasks"]) for r in figures["agent"]] == [(4, 1), (1, 4)]
    assert all(r["ray_tasks_per_s"] > 0 for r in figures["agent"])
    assert figures["projection"]["nodes"] == 16
