"""The engine hands a run's rows to the `generate_rows` hook: this plugin answers it (rounds
through the runner), and without it a run that needs a runner stops with the install hint."""

from __future__ import annotations

import json

import pandas as pd


def samplers_run(bashgym_cli, bashgym_env, out):
    seed = bashgym_env.workdir / "seed.csv"
    pd.DataFrame({"task": ["a", "b", "c"]}).to_csv(seed, index=False)
    return bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={seed}", "-p", "samplers", "-n", "5",
        "-k", "parquet", "--out", out,
        "--set", "pipeline.expressions.prompt=do {{ task }}",
    )  # fmt: skip


def test_the_plugin_makes_the_rows_in_rounds(bashgym_cli, bashgym_env, bashgym_host):
    assert "work-rounds" in bashgym_host.infos  # installed by default, found by entry point
    out = bashgym_env.workdir / "run"
    result = samplers_run(bashgym_cli, bashgym_env, out)
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(out / "data.parquet")
    assert list(rows["prompt"]) == ["do a", "do b", "do c", "do a", "do b"]
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["requested"] == 5 and len(summary["rounds"]) == 1


def test_without_it_a_run_needing_a_runner_says_what_to_install(
    bashgym_cli, bashgym_env, bashgym_host
):
    bashgym_host.remove("work-rounds")
    result = samplers_run(bashgym_cli, bashgym_env, bashgym_env.workdir / "run")
    assert result.exit_code == 2
    assert "pip install bashgym-work-rounds" in result.output
