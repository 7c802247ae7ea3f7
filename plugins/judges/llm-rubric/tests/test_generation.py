"""The judge on the real DataDesigner engine, answered by the scripted model server."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from bashgym_designer.designer import generate, seed_frame
from bashgym_designer.drops import read_drops
from bashgym_designer.models import model_config, model_provider, providers_for
from bashgym_designer.rubrics import get_rubric, scores_of, total_score_expr
from bashgym_judges_llm_rubric import LlmRubricJudge, LlmRubricOptions
from bashgym_testing.server import Reply

RESPONSE_RE = re.compile(r"<response>\s*(.*?)\s*</response>", re.DOTALL)
RUBRIC = get_rubric("instruction-response")


def judge_json(helpfulness: int, correctness: int) -> Reply:
    body = {
        "helpfulness": {"reasoning": "scripted", "score": helpfulness},
        "correctness": {"reasoning": "scripted", "score": correctness},
    }
    return Reply("```json\n" + json.dumps(body) + "\n```")


def score_by_marker(request) -> Reply:
    """Judge answers chosen by a marker in the judged response: WRONG, VAGUE, else good."""
    found = RESPONSE_RE.search(request.last_user_text)
    response = found.group(1) if found else ""
    if "WRONG" in response:
        return judge_json(4, 2)
    if "VAGUE" in response:
        return judge_json(2, 5)
    if "PERFECT" in response:
        return judge_json(5, 5)
    return judge_json(5, 4)


def is_judge_prompt(request) -> bool:
    return "<response_schema>" in request.last_user_text


def run_judge(scripted_models, seed: pd.DataFrame, options: LlmRubricOptions, total: bool = False):
    import data_designer.config as dd

    run = scripted_models.run_context()
    with run.models:
        builder = dd.DataDesignerConfigBuilder(model_configs=[])
        LlmRubricJudge().configure(builder, options, run)
        if total:
            expr = total_score_expr(options.column, RUBRIC)
            builder.add_column(dd.ExpressionColumnConfig(name="total", expr=expr, dtype="int"))
        builder.with_seed_dataset(seed_frame(seed), sampling_strategy=dd.SamplingStrategy.ORDERED)
        return generate(
            builder,
            num_records=len(seed),
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )


def test_scores_are_ints_rows_below_threshold_are_dropped_with_reasons(scripted_models):
    server = scripted_models.server
    server.add_rule(is_judge_prompt, score_by_marker)
    seed = pd.DataFrame(
        {
            "prompt": ["What is 2+2?", "Capital of France?", "Sort [3,1]", "Name a prime"],
            "response": ["4", "Lyon (WRONG)", "[1, 3]", "VAGUE something"],
        }
    )
    gen = run_judge(scripted_models, seed, LlmRubricOptions(), total=True)

    kept = gen.dataset.sort_values("response").reset_index(drop=True)
    assert list(kept["response"]) == ["4", "[1, 3]"]
    for cell in kept["quality"]:
        assert scores_of(cell, RUBRIC) == {"helpfulness": 5, "correctness": 4}
        assert all(type(cell[c]["score"]) is int for c in RUBRIC.names)  # ints, not "5"
    assert list(kept["total"]) == [9, 9]
    assert str(kept["total"].dtype).startswith("int")

    drops = {(d.row["response"], d.reason) for d in read_drops(gen.artifact_dir)}
    assert drops == {
        ("Lyon (WRONG)", "instruction-response: correctness below 3"),
        ("VAGUE something", "instruction-response: helpfulness below 3"),
    }
    judged = [r for r in server.completions if is_judge_prompt(r)]
    assert len(judged) == 4
    text = judged[0].last_user_text
    assert text.startswith(RUBRIC.instructions) and "<task>" in text and "<response>" in text


def test_thresholds_and_drop_below_change_what_is_kept(scripted_models):
    scripted_models.server.add_rule(is_judge_prompt, score_by_marker)
    # Two rows stay: DataDesigner 0.9.6's profiler crashes on a one-row result (token stddev NA).
    seed = pd.DataFrame(
        {"prompt": ["a", "b", "c", "d"], "response": ["fine", "VAGUE", "PERFECT", "PERFECT!"]}
    )
    options = LlmRubricOptions(thresholds={"correctness": 5}, column="grade")
    gen = run_judge(scripted_models, seed, options)
    assert sorted(gen.dataset["response"]) == ["PERFECT", "PERFECT!"]
    reasons = sorted(d.reason for d in read_drops(gen.artifact_dir))
    assert reasons == [
        "instruction-response: correctness below 5",  # "fine" scored correctness 4
        "instruction-response: helpfulness below 3",
    ]

    scripted_models.server.add_rule(is_judge_prompt, score_by_marker)
    gen = run_judge(scripted_models, seed, LlmRubricOptions(drop_below=False), total=True)
    assert sorted(gen.dataset["total"]) == [7, 9, 10, 10]  # VAGUE: 2 + 5, fine: 5 + 4
    assert read_drops(gen.artifact_dir) == []


def test_an_unparseable_judge_answer_loses_the_row_in_datadesigner(scripted_models):
    """DataDesigner drops a row whose judge output never parses (it logs "Generated N of M");
    the engine counts the shortfall. Shown here, so a change in that behaviour is noticed."""
    server = scripted_models.server
    server.add_rule(lambda r: is_judge_prompt(r) and "GARBLED" in r.last_user_text, "no json here")
    server.add_rule(is_judge_prompt, score_by_marker)
    seed = pd.DataFrame({"prompt": ["q1", "q2", "q3"], "response": ["ok", "GARBLED", "ok too"]})
    gen = run_judge(scripted_models, seed, LlmRubricOptions())
    assert len(gen.dataset) < gen.requested == 3
    assert sorted(gen.dataset["response"]) == ["ok", "ok too"]
    assert read_drops(gen.artifact_dir) == []  # not the filter's doing: DataDesigner's own drop


def test_model_alias_falls_back_to_default_and_a_pipelines_own_config_wins(scripted_models):
    import data_designer.config as dd

    run = scripted_models.run_context()
    with run.models:
        builder = dd.DataDesignerConfigBuilder(model_configs=[])
        LlmRubricJudge().configure(builder, LlmRubricOptions(model="grader"), run)
        (config,) = [c for c in builder.model_configs if c.alias == "grader"]
        assert config.provider == "grader"  # not in settings: resolved like `default`
        assert (
            model_provider(run.models.resolve("grader")).endpoint
            == model_provider(run.models.resolve("default")).endpoint
        )

        own = model_config(run.models.resolve("judge"), temperature=0.0)
        builder = dd.DataDesignerConfigBuilder(model_configs=[own])
        LlmRubricJudge().configure(builder, LlmRubricOptions(drop_below=False), run)
        assert builder.model_configs == [own]
        assert [p.name for p in builder.get_processor_configs()] == []
        assert builder.get_column_config("quality").model_alias == "judge"


@pytest.fixture
def judged_csv(bashgym_env):
    path = bashgym_env.workdir / "answers.csv"
    pd.DataFrame(
        {
            "prompt": ["What is 2+2?", "Capital of France?", "Largest planet?"],
            "response": ["4", "Lyon (WRONG)", "Jupiter"],
        }
    ).to_csv(path, index=False)
    return path


def cli_run(bashgym_cli, out, *args):
    result = bashgym_cli("run", *args, "-j", "llm-rubric", "-k", "parquet", "--out", out)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok"
    (parquet,) = [p for p in out.rglob("*.parquet") if "datadesigner" not in p.parts]
    return summary, pd.read_parquet(parquet)


def test_cli_run_judges_a_pipelines_rows(scripted_models, bashgym_cli, judged_csv, tmp_path):
    scripted_models.server.add_rule(is_judge_prompt, score_by_marker)
    out = tmp_path / "run"
    summary, written = cli_run(
        bashgym_cli, out, "-s", "files", "--set", f"source.path={judged_csv}", "-p", "samplers"
    )
    assert summary["counts"]["kept"] == 2, summary["counts"]
    assert any("correctness below 3" in r for r in summary["counts"]["dropped"]), summary
    assert sorted(written["response"]) == ["4", "Jupiter"]
    assert all(scores_of(c, RUBRIC)["correctness"] == 4 for c in written["quality"])


def test_cli_run_judges_source_rows_without_a_pipeline(
    scripted_models, bashgym_cli, judged_csv, tmp_path
):
    scripted_models.server.add_rule(is_judge_prompt, score_by_marker)
    summary, written = cli_run(
        bashgym_cli, tmp_path / "run", "-s", "files", "--set", f"source.path={judged_csv}"
    )
    assert summary["counts"]["kept"] == 2, summary["counts"]
    assert sorted(written["response"]) == ["4", "Jupiter"]


def test_cli_names_the_known_rubrics_and_criteria(scripted_models, bashgym_cli, judged_csv):
    base = (
        "run",
        "-s",
        "files",
        "--set",
        f"source.path={judged_csv}",
        "-p",
        "samplers",
        "-k",
        "parquet",
    )
    result = bashgym_cli(*base, "-j", "llm-rubric", "--set", "judge.rubric=code")
    assert result.exit_code == 2
    assert "unknown rubric 'code': choose one of coding-solution" in " ".join(result.output.split())
    result = bashgym_cli(*base, "-j", "llm-rubric", "--set", "judge.thresholds.accuracy=4")
    assert result.exit_code == 2
    assert "'accuracy', not criteria of rubric 'instruction-response'" in " ".join(
        result.output.split()
    )
    assert scripted_models.server.completions == []  # refused before any work
