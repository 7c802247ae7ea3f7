"""from-unstructured on the real DataDesigner engine, answered by the scripted model server."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from bashgym_designer.designer import generate, seed_frame
from bashgym_designer.drops import read_drops
from bashgym_designer.models import providers_for
from bashgym_designer.rubrics import get_rubric
from bashgym_pipelines_from_unstructured.options import FromUnstructuredOptions
from bashgym_pipelines_from_unstructured.pipeline import FromUnstructuredPipeline
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from bashgym_testing.server import Reply

from bashgym.contracts import InputError

RUBRIC = get_rubric("groundedness")
RESUME = (
    "A run that stops part way is resumed by running the same command again: finished "
    "batches are kept and only the missing rows are generated. Pass --fresh to start over. "
    "The run directory holds run.toml, so a run can be repeated exactly from it."
)
KEYS = (
    "Keys are never written in configuration files. Each model alias names the environment "
    "variable holding its key with api_key_env. A run whose variable is unset stops before "
    "any request, naming the variable. UNGROUNDED"
)
SEED = pd.DataFrame(
    {
        "text": [RESUME, KEYS, "# Title\n\nToo short."],
        "path": ["docs/cli.md", "docs/models.md", "docs/empty.md"],
        "chunk_index": [0, 3, 0],
        "start_line": [1, 40, 1],
        "end_line": [9, 52, 3],
        "page": [None, None, None],
    }
)


def is_judge(request) -> bool:
    return request.last_user_text.startswith(RUBRIC.instructions)


def judge_reply(request) -> Reply:
    score = 2 if "UNGROUNDED" in request.last_user_text else 5
    body = {c: {"reasoning": "scripted", "score": score} for c in RUBRIC.names}
    return Reply("```json\n" + json.dumps(body) + "\n```")


def writer_reply(request) -> Reply:
    text = request.last_user_text
    topic = "resume a run" if "resumed" in text else "set an API key"
    if text.startswith("Answer the question"):
        answer = 'Run the same command again: "finished batches are kept".'
        if "Source: " in text:
            answer += "\nSource: " + text.split("Source: ")[1].split("\n")[0]
        return Reply(answer)
    return Reply(f"How do I {topic} in bashgym?")


def script(server) -> None:
    server.add_rule(is_judge, judge_reply)
    server.add_rule(lambda r: r.last_user_text != "Hello!", writer_reply)


def run_pipeline(scripted_models, options: FromUnstructuredOptions, seed: pd.DataFrame = SEED):
    import data_designer.config as dd

    script(scripted_models.server)
    run = scripted_models.run_context()
    pipeline = FromUnstructuredPipeline()
    with run.models:
        builder = pipeline.build(options, run, seed)
        builder.with_seed_dataset(seed_frame(seed), sampling_strategy=dd.SamplingStrategy.ORDERED)
        gen = generate(
            builder,
            num_records=len(seed),
            run_dir=run.run_dir,
            settings=run.settings,
            providers=providers_for(run.models, builder.model_configs),
        )
    return run, gen, pipeline.finalize(gen.dataset, options, run).dataset


def test_grounded_questions_and_answers_from_chunks(scripted_models, tmp_path):
    run, gen, rows = run_pipeline(scripted_models, FromUnstructuredOptions())
    assert len(rows) == 1
    row = rows.iloc[0]
    assert row["prompt"] == "How do I resume a run in bashgym?"
    assert row["response"].endswith("Source: docs/cli.md, lines 1-9")
    assert (row["chunk_id"], row["source_path"], row["start_line"]) == (
        "docs/cli.md#0",
        "docs/cli.md",
        1,
    )
    assert row["context"] == RESUME
    assert row["question_type"] in FromUnstructuredOptions().question_types
    assert row["judge"]["groundedness"]["score"] == 5

    drops = sorted((d.row["path"], d.reason) for d in read_drops(gen.artifact_dir))
    assert drops == [
        ("docs/empty.md", "chunk shorter than 200 characters"),
        ("docs/models.md", "groundedness: groundedness below 3"),
    ]
    calls = [r for r in scripted_models.server.completions if r.last_user_text != "Hello!"]
    assert not [r for r in calls if "Too short" in r.last_user_text]  # no call for a short chunk
    asks = [r.last_user_text for r in calls if r.last_user_text.startswith("You write questions")]
    assert len(asks) == 2 and all("never seen the passage" in a for a in asks)
    assert any("Source: docs/models.md, lines 40-52\n<passage>" in a for a in asks)
    judged = [r.last_user_text for r in calls if is_judge(r)]
    assert len(judged) == 2 and any(RESUME in j and "How do I resume" in j for j in judged)

    out = tmp_path / "out"
    NemoJsonlSink().write(rows, NemoJsonlOptions(path=str(out), val_fraction=0), run, "rows")
    (line,) = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert line["messages"] == [  # document Q&A: no coding-agent system prompt by default
        {"role": "user", "content": row["prompt"]},
        {"role": "assistant", "content": row["response"]},
    ]


def test_with_context_prompts_carry_the_chunk_and_a_plain_text_column_works(scripted_models):
    seed = pd.DataFrame({"body": [RESUME, RESUME]})  # no path, no lines: no Source line
    options = FromUnstructuredOptions(text_column="body", prompt_style="with-context")
    _, _, rows = run_pipeline(scripted_models, options, seed)
    assert len(rows) == 2
    assert (
        rows.iloc[0]["prompt"]
        == f"<document>\n{RESUME}\n</document>\n\nHow do I resume a run in bashgym?"
    )
    assert "chunk_id" in rows.columns and rows["chunk_id"].isna().all()
    asks = [r.last_user_text for r in scripted_models.server.completions]
    assert any("may refer to it" in a for a in asks)


def test_seed_errors_are_clear(scripted_models):
    run = scripted_models.run_context()
    pipeline = FromUnstructuredPipeline()
    with run.models:
        with pytest.raises(InputError, match=r"no text column 'text'; its columns are \['body'\]"):
            pipeline.build(FromUnstructuredOptions(), run, pd.DataFrame({"body": ["x"]}))
        with pytest.raises(InputError, match="needs a source"):
            pipeline.build(FromUnstructuredOptions(), run, None)
        with pytest.raises(InputError, match=r"\['question'\] clash"):
            pipeline.build(FromUnstructuredOptions(), run, SEED.assign(question="q"))


def test_the_example_seed_builds_and_the_config_exports(scripted_models, tmp_path):
    import data_designer.config as dd

    pipeline = FromUnstructuredPipeline()
    options = FromUnstructuredOptions()
    seed = pipeline.example_seed(options)
    assert len(seed) >= 3 and (seed["text"].str.len() >= options.min_chunk_chars).all()
    seed.to_parquet(tmp_path / "seed.parquet")
    run = scripted_models.run_context()
    with run.models:
        builder = pipeline.build(options, run, seed)
    builder.with_seed_dataset(dd.LocalFileSeedSource(path=str(tmp_path / "seed.parquet")))
    builder.write_config(tmp_path / "config.yaml")
    loaded = dd.DataDesignerConfigBuilder.from_config(tmp_path / "config.yaml")
    assert {"question", "answer", "judge", "chunk_id"} <= {
        c.name for c in loaded.get_column_configs()
    }
    assert all(f.description for f in FromUnstructuredOptions.model_fields.values())
