"""`--seed N`: the same seed, config and inputs give the same samples, batch by batch."""

from __future__ import annotations

import pandas as pd


def _samples(bashgym_cli, repo, tmp_path, seed: int, name: str) -> list[tuple[str, str]]:
    out = tmp_path / name
    result = bashgym_cli(
        "run", str(repo / "examples" / "slice.toml"), "-n", "40", "--seed", str(seed),
        "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(out / "data.parquet")
    return list(zip(rows["difficulty"], rows["style"], strict=True))


def test_the_same_seed_repeats_the_samplers_and_another_does_not(
    bashgym_cli, bashgym_env, repo, tmp_path, monkeypatch
):
    monkeypatch.chdir(repo)  # the run file names its input relative to the repository
    monkeypatch.setenv("BASHGYM_DESIGNER__BUFFER_SIZE", "10")  # four batches, run concurrently
    monkeypatch.setenv("BASHGYM_RUNS_DIR", str(tmp_path / "runs"))
    first = _samples(bashgym_cli, repo, tmp_path, 7, "a")
    again = _samples(bashgym_cli, repo, tmp_path, 7, "b")
    other = _samples(bashgym_cli, repo, tmp_path, 8, "c")
    assert len(first) == 40
    assert first == again
    assert first != other
    assert len(set(first)) > 1  # really sampled
