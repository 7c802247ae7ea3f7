"""coding-agent-sft on the real DataDesigner engine against the scripted model server: chat rows
the nemo-jsonl sink takes as-is, every dropped row counted with its reason, seeds from Claude
Code transcripts, clear errors for unusable seeds, and an exportable config."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml
from bashgym_designer.designer import generate
from bashgym_designer.drops import read_drops
from bashgym_designer.models import providers_for
from bashgym_pipelines_coding_agent.options import SftOptions
from bashgym_pipelines_coding_agent.sft import CodingAgentSft
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from pydantic import ValidationError

from bashgym.contracts import InputError


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

REPO = Path(__file__).resolve().parents[4]
TRANSCRIPTS = REPO / "examples" / "transcripts"


@pytest.fixture(autouse=True)
def _no_health_checks(monkeypatch):
    """Health checks cost a request per alias per create; the scripted server is up anyway."""
    monkeypatch.setenv("DATA_DESIGNER_SKIP_MODEL_HEALTH_CHECKS", "1")


def _generate(run, builder, n):
    return generate(
        builder,
        num_records=n,
        run_dir=run.run_dir,
        settings=run.settings,
        providers=providers_for(run.models, builder.model_configs),
    )


def test_options_are_checked():
    with pytest.raises(ValidationError, match="has 7 values but 2 weights"):
        SftOptions(weights={"language": [1, 2]})
    with pytest.raises(ValidationError, match=r"weights for unknown sampler column\(s\) \['x'\]"):
        SftOptions(weights={"x": [1.0]})
    with pytest.raises(ValidationError, match="has no values"):
        SftOptions(categories={"framework": []})
    with pytest.raises(ValidationError, match="clashes with a pipeline column"):
        SftOptions(categories={"chosen": ["x"]})
    with pytest.raises(ValidationError, match="must be an identifier"):
        SftOptions(categories={"test framework": ["pytest"]})
    samplers = SftOptions(categories={"language": ["python", "go"], "db": ["postgres"]}).samplers()
    assert samplers["language"] == (["python", "go"], None)  # own values: uniform
    assert samplers["db"] == (["postgres"], None)
    assert samplers["task_category"][1] is not None  # built-in values keep their weights


def test_cli_run_writes_chat_lines_the_sink_accepts(bashgym_cli, scripted_models, bashgym_env):
    out = bashgym_env.workdir / "run"
    result = bashgym_cli("run", "-p", "coding-agent-sft", "-n", "6", "-k", "nemo-jsonl", "-o", out)
    assert result.exit_code == 0, result.output
    lines = [
        json.loads(line)
        for name in ("train.jsonl", "val.jsonl")
        for line in (out / "nemo-jsonl" / name).read_text().splitlines()
    ]
    assert len(lines) == 6
    for line in lines:
        roles = [m["role"] for m in line["messages"]]
        assert roles == ["system", "user", "assistant"]
        assert "read_file(path)" in line["messages"][0]["content"]  # the agent system prompt
        assert line["messages"][2]["content"].startswith("## Plan")
    summary = json.loads((out / "run.json").read_text())
    assert summary["status"] == "ok" and summary["counts"]["kept"] == 6
    # Three model roles, two aliases: the solver got its own DataDesigner alias.
    # (the run's one-line preflight per alias, "Reply with OK.", carries no temperature)
    requests = [
        r for r in scripted_models.server.completions if r.last_user_text != "Reply with OK."
    ]
    temperatures = {(r.model, r.body.get("temperature")) for r in requests}
    assert temperatures == {
        ("scripted-default", 0.9),
        ("scripted-default", 0.7),
        ("scripted-judge", 0.0),
    }
    assert not [r for r in requests if "frequency_penalty" in r.body]  # none unless asked


def test_a_frequency_penalty_reaches_every_request(bashgym_cli, scripted_models, bashgym_env):
    out = bashgym_env.workdir / "run"
    result = bashgym_cli(
        "run", "-p", "coding-agent-sft", "-n", "2", "-k", "nemo-jsonl", "-o", out,
        "--set", "pipeline.frequency_penalty=0.4",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    requests = [
        r for r in scripted_models.server.completions if r.last_user_text != "Reply with OK."
    ]
    assert len(requests) >= 6  # task, solution and verdict for each row
    assert {r.body.get("frequency_penalty") for r in requests} == {0.4}


def _steer(server, *, unparseable=(), broken=(), low=()):
    """Number the tasks; solver and judge answer per task number."""
    server.add_rule(t.is_task_request, t.numbered_tasks())

    def solve(request):
        n = t.task_number(request)
        if n in unparseable:
            return "I would rather describe the fix in prose."  # never parses: the row is lost
        files = {"calc.py": t.BROKEN_MODULE} if n in broken else None
        return t.json_reply(t.trajectory(n, files))

    def judge(request):
        scores = t.all_scores(5) | ({"correctness": 1} if t.task_number(request) in low else {})
        return t.json_reply(t.judge_verdict(scores))

    server.add_rule(t.is_solution_request, solve)
    server.add_rule(t.is_judge_request, judge)


def _numbers(texts):
    return sorted(int(t.TASK_RE.search(x).group(1)) for x in texts)


def test_low_scores_and_ruff_failures_are_dropped_with_their_reason(scripted_models):
    _steer(scripted_models.server, broken={2}, low={3})
    run = scripted_models.run_context()
    options = SftOptions(num_records=6, lint_python_files=2)
    with run.models:
        builder = CodingAgentSft().build(options, run, None)
        generation = _generate(run, builder, 6)
    drops = read_drops(generation.artifact_dir)
    assert sorted((d.reason, _numbers([d.row["task_prompt"]])[0]) for d in drops) == [
        ("code: python in solution_py_1 fails ruff", 2),
        ("coding-solution: correctness below 3", 3),
    ]
    data = generation.dataset
    assert _numbers(data["task_prompt"]) == [1, 4, 5, 6]

    rows = CodingAgentSft().finalize(data, options, run)
    assert list(rows["score_correctness"]) == [5] * 4 and list(rows["score_total"]) == [15] * 4
    assert all(5 < score < 10 for score in rows["ruff_score"])  # PLR2004 in the test file
    answer = rows["messages"][0][1]["content"]
    assert "### 2. `write_file` calc.py" in answer and "return a + b" in answer
    assert "### 4. `edit_file` README.md" in answer and "With:\n````\n\n````" in answer
    assert "Search for `subtract\\(`" in answer and answer.endswith("pytest passes. ")
    first = data.iloc[0]
    assert first["solution_py_1"] == "# calc.py\n" + t.GOOD_MODULE
    assert first["solution_py_2"].startswith("# tests/test_calc.py\nfrom calc import add")
    assert json.loads(rows["trajectory"][0])["steps"][0]["tool"] == "read_file"
    written = NemoJsonlSink().write(rows, NemoJsonlOptions(val_fraction=0), run, "chat").paths
    assert len(written[0].read_text().splitlines()) == 4 and not run.dropped


def test_unparseable_answers_leave_fewer_rows(scripted_models):
    _steer(scripted_models.server, unparseable={1, 4}, low={2}, broken={5})
    run = scripted_models.run_context()
    with run.models:
        builder = CodingAgentSft().build(SftOptions(num_records=6), run, None)
        generation = _generate(run, builder, 6)
    assert _numbers(generation.dataset["task_prompt"]) == [3, 6]
    assert sorted(d.reason for d in read_drops(generation.artifact_dir)) == [
        "code: python in solution_py_1 fails ruff",
        "coding-solution: correctness below 3",
    ]
    # 6 requested = 2 kept + 2 dropped by the filter + 2 whose answer never parsed, which
    # DataDesigner retried before giving up (and which must not sink the rest of the batch).
    solver_calls = [r for r in scripted_models.server.completions if t.is_solution_request(r)]
    assert sum(t.task_number(r) in (1, 4) for r in solver_calls) > 2


def test_claude_code_transcripts_inspire_new_tasks(bashgym_cli, scripted_models, bashgym_env):
    out = bashgym_env.workdir / "seeded"
    result = bashgym_cli(
        "run", "-s", "claude-code", "--set", f"source.path={TRANSCRIPTS}",
        "-p", "coding-agent-sft", "-k", "nemo-jsonl", "-o", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    prompts = [r.last_user_text for r in scripted_models.server.completions if t.is_task_request(r)]
    assert len(prompts) == 6  # one per transcript
    inspirations = {p.split("<inspiration>\n")[1].split("\n</inspiration>")[0] for p in prompts}
    assert "Rename the `Note.body` field to `Note.text` everywhere." in inspirations
    assert "Add full-text search over notes." in inspirations
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["kept"] == 6
    seed = pd.read_parquet(out / "seeds" / "coding-agent-sft.parquet")
    assert set(seed["seed_source"]) == {"claude-code"}
    assert "trace" not in seed.columns  # the whole transcript never enters the generation
    lines = (out / "nemo-jsonl" / "train.jsonl").read_text().splitlines()
    lines += (out / "nemo-jsonl" / "val.jsonl").read_text().splitlines()
    assert len(lines) == 6


def test_seed_columns_are_found_or_named(scripted_models):
    run = scripted_models.run_context()
    pipeline = CodingAgentSft()
    with run.models:
        with pytest.raises(
            InputError, match=r"cannot find the task in the seed columns \['a', 'b'\]"
        ):
            pipeline.build(SftOptions(), run, pd.DataFrame({"a": [1], "b": [2]}))
        with pytest.raises(InputError, match=r"seed_column 'goal' is not a seed column; .*'task'"):
            pipeline.build(SftOptions(seed_column="goal"), run, pd.DataFrame({"task": ["x"]}))
        with pytest.raises(InputError, match="no seed row has a task in column 'prompt'"):
            pipeline.build(SftOptions(), run, pd.DataFrame({"prompt": ["", None]}))
        # A chat export: a prompt on some rows, messages on others; system turns are skipped.
        chats = pd.DataFrame(
            {
                "id": ["t1", "t2", "t3"],
                "prompt": ["Rename utils to common.", None, None],
                "messages": [
                    None,
                    [
                        {"role": "system", "content": "Be careful."},
                        {"role": "user", "content": "Cache pip."},
                    ],
                    [{"role": "assistant", "content": "hi"}],
                ],
            }
        )
        pipeline.build(SftOptions(), run, chats)
    seed = pd.read_parquet(run.run_dir / "seeds" / "coding-agent-sft.parquet")
    assert list(seed["seed_task"]) == ["Rename utils to common.", "Cache pip."]
    assert list(seed["seed_id"]) == ["t1", "t2"]
    assert run.dropped == {
        "coding-agent-sft: seed row has no task in column 'prompt' or 'messages'": 1
    }


def test_config_exports_with_and_without_a_seed(scripted_models, tmp_path):
    run = scripted_models.run_context()
    pipeline = CodingAgentSft()
    with run.models:
        for name, seed in (("plain", None), ("seeded", pipeline.example_seed(SftOptions()))):
            builder = pipeline.build(SftOptions(thresholds={"correctness": 4}), run, seed)
            builder.write_config(tmp_path / f"{name}.yaml")
            config = yaml.safe_load((tmp_path / f"{name}.yaml").read_text())
            columns = {c["name"]: c for c in config["data_designer"]["columns"]}
            assert columns["trajectory"]["column_type"] == "llm-structured"
            assert columns["trajectory_text"]["column_type"] == "expression"
            assert "solution_py_3_ruff" in columns and "solution_py_4" not in columns
            (processor,) = config["data_designer"]["processors"]
            reasons = [rule["reason"] for rule in processor["rules"]]
            assert "coding-solution: correctness below 4" in reasons
            assert "code: python in solution_py_1 fails ruff" in reasons
            seed_config = config["data_designer"].get("seed_config")
            assert (seed_config is not None) == (seed is not None)
            aliases = {m["alias"]: m["provider"] for m in config["data_designer"]["model_configs"]}
            assert aliases == {
                "default": "default",
                "default-solution": "default",
                "judge": "judge",
            }


def test_solution_schema_is_bare_but_still_the_trajectory_shape():
    """The schema DataDesigner appends to every solution request carries no prose (the prompt
    explains each field) yet accepts exactly what Trajectory accepts, steps capped."""
    import json

    import jsonschema
    from bashgym_pipelines_coding_agent.columns import solution_schema

    schema = solution_schema(max_steps=2)
    text = json.dumps(schema)
    assert '"description"' not in text and '"title"' not in text
    step = {"thought": "look", "tool": "bash", "command": "ls", "observation": "a.py"}
    ok = {"plan": ["inspect"], "steps": [step, step], "summary": "done"}
    jsonschema.validate(ok, schema)
    for bad in (
        {**ok, "steps": [step, step, step]},  # over max_steps
        {**ok, "steps": [{**step, "tool": "browse"}]},  # not one of the tools
        {"plan": ["inspect"], "steps": [step]},  # no summary
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
