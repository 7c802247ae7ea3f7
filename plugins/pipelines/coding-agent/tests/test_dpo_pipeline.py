"""coding-agent-dpo through the real CLI, engine, DataDesigner and nemo-jsonl sink, with the
scripted server judging each side of each task: only pairs whose scores differ by the margin
survive, ties and small margins are recorded with their reasons, and so is a chosen solution
whose Python fails ruff."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
import yaml
from bashgym_designer.designer import generate
from bashgym_designer.drops import read_drops
from bashgym_designer.models import providers_for
from bashgym_pipelines_coding_agent.dpo import CodingAgentDpo
from bashgym_pipelines_coding_agent.dpo_options import DpoOptions
from pydantic import ValidationError

from bashgym.records import Message, Trace, trace_to_row


def _load_scripting():
    """The shared scripted-answer helpers beside this file (test modules import no siblings
    in pytest's importlib mode)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).with_name("scripting.py")
    spec = importlib.util.spec_from_file_location("coding_agent_scripting", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


t = _load_scripting()

SIDE_RE = re.compile(r"\[side (a|b)\]")
SIDE_OF_TEMPERATURE = {0.2: "a", 1.0: "b"}
# task number -> (side a's scores, side b's scores) as (correctness, tool_usage, completeness)
SCORES = {
    1: ((5, 5, 5), (1, 1, 1)),  # 15 vs 3: kept, a chosen
    2: ((3, 3, 3), (3, 3, 4)),  # 9 vs 10: margin 1 < 2
    3: ((4, 4, 4), (4, 4, 4)),  # tie
    4: ((2, 2, 2), (4, 4, 4)),  # 6 vs 12: kept, b chosen
    5: ((4, 4, 4), (4, 4, 2)),  # 12 vs 10: margin exactly 2, kept
    6: ((5, 5, 5), (1, 1, 1)),  # a chosen, but a's calc.py fails ruff
}


@pytest.fixture(autouse=True)
def _no_health_checks(monkeypatch):
    monkeypatch.setenv("DATA_DESIGNER_SKIP_MODEL_HEALTH_CHECKS", "1")


def _steer(server):
    server.add_rule(t.is_task_request, t.numbered_tasks())

    def solve(request):
        n, side = t.task_number(request), SIDE_OF_TEMPERATURE[request.body["temperature"]]
        files = {"calc.py": t.BROKEN_MODULE} if (n, side) == (6, "a") else None
        return t.json_reply(t.trajectory(n, files, note=f"[side {side}]"))

    def judge(request):
        side = SIDE_RE.search(request.last_user_text).group(1)
        scores = SCORES[t.task_number(request)][0 if side == "a" else 1]
        names = ("correctness", "tool_usage", "completeness")
        return t.json_reply(t.judge_verdict(dict(zip(names, scores, strict=True))))

    server.add_rule(t.is_solution_request, solve)
    server.add_rule(t.is_judge_request, judge)


def test_options_are_checked():
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        DpoOptions(min_margin=0)
    assert DpoOptions().temperature == 0.2 and DpoOptions().temperature_b == 1.0


def test_only_pairs_with_the_margin_are_kept(bashgym_cli, scripted_models, bashgym_env):
    _steer(scripted_models.server)
    out = bashgym_env.workdir / "run"
    result = bashgym_cli(
        "run", "-p", "coding-agent-dpo", "-n", "6", "-k", "nemo-jsonl",
        "--set", "sink.val_fraction=0", "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output

    drops = read_drops(out / "datadesigner" / "dataset")
    assert sorted((d.reason, t.task_number_of(d.row["task_prompt"])) for d in drops) == [
        ("code: python in chosen_py_1 fails ruff", 6),
        ("dpo: score margin below 2", 2),
        ("dpo: tied scores (no preference)", 3),
    ]
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["kept"] == 3
    dropped = " | ".join(summary["counts"]["dropped"])
    assert "dpo: tied scores" in dropped and "dpo: score margin below 2" in dropped

    lines = [json.loads(x) for x in (out / "nemo-jsonl" / "train.jsonl").read_text().splitlines()]
    assert len(lines) == 3
    by_task = {t.task_number_of(line["prompt"]): line for line in lines}
    assert sorted(by_task) == [1, 4, 5]
    assert "[side a]" in by_task[1]["chosen"] and "[side b]" in by_task[1]["rejected"]
    assert "[side b]" in by_task[4]["chosen"] and "[side a]" in by_task[4]["rejected"]
    assert all(line["chosen"].startswith("## Plan") for line in lines)


def test_pairs_keep_scores_and_provenance(scripted_models):
    _steer(scripted_models.server)
    run = scripted_models.run_context()
    options = DpoOptions(num_records=6, min_margin=3, min_chosen_score=12, lint_python_files=1)
    with run.models:
        builder = CodingAgentDpo().build(options, run, None)
        generation = generate(
            builder,
            num_records=6,
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )
    reasons = {
        t.task_number_of(d.row["task_prompt"]): d.reason
        for d in read_drops(generation.artifact_dir)
    }
    assert reasons == {
        2: "dpo: score margin below 3",
        3: "dpo: tied scores (no preference)",
        5: "dpo: score margin below 3",
        6: "code: python in chosen_py_1 fails ruff",
    }
    rows = CodingAgentDpo().finalize(generation.dataset, options, run)
    rows = rows.set_index(rows["prompt"].map(t.task_number_of)).sort_index()
    assert list(rows.index) == [1, 4]
    assert list(rows["chosen_score"]) == [15, 12] and list(rows["rejected_score"]) == [3, 6]
    assert list(rows["score_margin"]) == [12, 6]
    assert list(rows["chosen_from"]) == ["default@0.2", "default@1"]
    assert list(rows["rejected_score_correctness"]) == [1, 2]
    assert json.loads(rows.at[4, "chosen_trajectory"])["summary"].endswith("[side b]")
    assert rows["chosen_ruff_score"].notna().all()


def test_config_exports_and_takes_trace_seeds(scripted_models, tmp_path):
    trace = Trace(
        id="s1",
        messages=[
            Message(role="user", content="<command-name>/clear</command-name>"),
            Message(role="user", content="Make the retry loop back off exponentially."),
            Message(role="assistant", content="On it."),
        ],
    )
    seed = pd.DataFrame([trace_to_row(trace)])
    run = scripted_models.run_context()
    with run.models:
        builder = CodingAgentDpo().build(DpoOptions(model_b="judge"), run, seed)
    builder.write_config(tmp_path / "c.yaml")
    config = yaml.safe_load((tmp_path / "c.yaml").read_text())["data_designer"]
    aliases = {m["alias"]: m["provider"] for m in config["model_configs"]}
    assert aliases == {
        "default": "default",
        "judge": "judge",
        "default-solution_a": "default",
        "judge-solution_b": "judge",
    }
    (processor,) = config["processors"]
    assert [r["reason"] for r in processor["rules"]][:2] == [
        "dpo: tied scores (no preference)",
        "dpo: score margin below 2",
    ]
    prepared = pd.read_parquet(config["seed_config"]["source"]["path"])
    assert prepared.to_dict(orient="records") == [
        {
            "seed_task": "Make the retry loop back off exponentially.",
            "seed_id": "s1",
            "seed_source": None,
        }
    ]
