"""from-external on the real DataDesigner engine, answered by the scripted model server."""

from __future__ import annotations

import json
import re

import pandas as pd
from bashgym_designer.designer import generate, seed_frame
from bashgym_designer.drops import read_drops
from bashgym_designer.models import providers_for
from bashgym_designer.rubrics import get_rubric
from bashgym_pipelines_from_external.options import FromExternalOptions
from bashgym_pipelines_from_external.pipeline import FromExternalPipeline
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from bashgym_testing.server import Reply

from bashgym.contracts import RunContext
from bashgym.settings import Settings

RUBRIC = get_rubric("instruction-response")
RESPONSE_RE = re.compile(r"<response>\s*(.*?)\s*</response>", re.DOTALL)


def is_judge(request) -> bool:
    return request.last_user_text.startswith(RUBRIC.instructions)


def judge_reply(request) -> Reply:
    """Scores from markers in the judged response: LOWSCORE fails, GARBLE is no JSON at all."""
    found = RESPONSE_RE.search(request.last_user_text)
    response = found.group(1) if found else ""
    if "GARBLE" in response:
        return Reply("I cannot judge this.")
    score = 1 if "LOWSCORE" in response else 5
    body = {c: {"reasoning": "scripted", "score": score} for c in RUBRIC.names}
    return Reply("```json\n" + json.dumps(body) + "\n```")


def writer_reply(request) -> Reply:
    text = request.last_user_text
    if "<reference_answer>" in text:
        return Reply("Improved: " + text.split("<reference_answer>")[1].split("<")[0].strip())
    return Reply("Fresh answer to: " + text.strip())


def run_pipeline(scripted_models, seed: pd.DataFrame, options: FromExternalOptions):
    import data_designer.config as dd

    server = scripted_models.server
    server.add_rule(is_judge, judge_reply)
    server.add_rule(lambda r: True, writer_reply)
    run = scripted_models.run_context()
    pipeline = FromExternalPipeline()
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
    return run, builder, gen, pipeline.finalize(gen.dataset, options, run).dataset


SEED = pd.DataFrame(
    {
        "id": ["a", "b", "c", "d", "e", "f"],
        "question": [
            "What is a Python generator?",
            "How do I undo the last git commit?",
            "",  # empty instruction
            "Name a sorting algorithm LOWSCORE",
            "What is 2 + 2?",
            "Explain HTTP caching.",
        ],
        "context": [None, "Keep the changes in the working tree.", None, None, None, None],
        "response": ["A function that yields.", "git reset --soft HEAD~1", "x", None, "4", None],
    }
)


def test_improves_references_writes_missing_ones_and_judges(scripted_models, tmp_path):
    run, _, gen, rows = run_pipeline(scripted_models, SEED, FromExternalOptions())
    rows = rows.sort_values("id").reset_index(drop=True)
    assert list(rows["id"]) == ["a", "b", "e", "f"]
    by_id = rows.set_index("id")
    # Context follows the instruction after a blank line; a missing one adds nothing (no "nan").
    assert by_id.loc["b", "prompt"] == (
        "How do I undo the last git commit?\n\nKeep the changes in the working tree."
    )
    assert by_id.loc["a", "prompt"] == "What is a Python generator?"
    assert by_id.loc["a", "response"] == "Improved: A function that yields."
    assert by_id.loc["f", "response"].startswith("Fresh answer to: Explain HTTP caching.")
    assert list(rows["response_origin"]) == ["improved", "improved", "improved", "generated"]
    assert by_id.loc["a", "source_response"] == "A function that yields."  # seed column kept
    assert by_id.loc["a", "system_prompt"] == FromExternalOptions().system_prompt
    assert by_id.loc["a", "judge"]["correctness"]["score"] == 5

    drops = {(d.row["id"], d.reason) for d in read_drops(gen.artifact_dir)}
    assert drops == {
        ("c", "empty instruction"),
        ("d", "instruction-response: helpfulness below 3"),
    }
    writer = [r for r in scripted_models.server.completions if not is_judge(r)]
    writer = [r for r in writer if r.last_user_text != "Hello!"]  # not health checks
    assert len(writer) == 5  # no call for the empty instruction
    assert all(FromExternalOptions().system_prompt in r.system_text for r in writer)

    out = tmp_path / "out"
    NemoJsonlSink().write(rows, NemoJsonlOptions(path=str(out), val_fraction=0), run, "rows")
    lines = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and not run.dropped
    assert [m["role"] for m in lines[0]["messages"]] == ["system", "user", "assistant"]
    assert lines[0]["messages"][0]["content"] == FromExternalOptions().system_prompt


def test_keep_mode_only_judges_the_references(scripted_models):
    seed = SEED[["id", "question", "response"]].rename(columns={"response": "answer"})
    seed = seed.assign(answer=seed["answer"].where(seed["id"] != "e", "GARBLE"))
    options = FromExternalOptions(reference="keep", mapping={"instruction": "question"})
    _, _, gen, rows = run_pipeline(scripted_models, seed, options)
    assert sorted(rows["id"]) == ["a", "b"]
    assert set(rows["response_origin"]) == {"reference"}
    assert sorted(rows["response"]) == ["A function that yields.", "git reset --soft HEAD~1"]
    reasons = sorted((d.row["id"], d.reason) for d in read_drops(gen.artifact_dir))
    assert reasons == [
        ("c", "empty instruction"),
        ("d", "no reference answer to keep"),
        ("f", "no reference answer to keep"),
    ]
    # e: the judge's answer never parsed, so DataDesigner itself lost the row; the kernel
    # accounts for it from the task traces (the CLI test checks run.json).
    assert "e" not in set(gen.dataset["id"])
    assert [(c, "unparseable" in r) for (c, r) in gen.failures] == [("gen_judge", True)]
    calls = scripted_models.server.completions
    assert not [
        r
        for r in calls
        if "Fresh answer" in r.last_user_text or "<reference_answer>" in r.last_user_text
    ]


def test_the_config_exports_with_a_file_seed(scripted_models, tmp_path):
    """Every column is declarative, so the builder writes out (with a file seed in place of the
    run's in-memory one) and DataDesigner can load it back."""
    import data_designer.config as dd

    seed_file = tmp_path / "seed.csv"
    SEED.to_csv(seed_file, index=False)
    run = scripted_models.run_context()
    with run.models:
        builder = FromExternalPipeline().build(FromExternalOptions(), run, SEED)
    builder.with_seed_dataset(dd.LocalFileSeedSource(path=str(seed_file)))
    builder.write_config(tmp_path / "config.yaml")
    loaded = dd.DataDesignerConfigBuilder.from_config(tmp_path / "config.yaml")
    names = [c.name for c in loaded.get_column_configs()]
    assert {"gen_prompt", "gen_response", "gen_judge", "gen_has_reference"} <= set(names)


def test_rows_without_an_instruction_or_a_response_are_handed_back_whole(tmp_path):
    """finalize drops a row with no instruction or no response (the filter drops such rows
    first in a run; finalize stays safe), counts it as before and hands it back whole."""
    run = RunContext(run_dir=tmp_path, settings=Settings())
    frame = pd.DataFrame(
        {
            "id": ["a", "b", "c"],
            "gen_prompt": ["What is 2 + 2?", None, "Name a colour."],
            "gen_response": ["4", "x", "  "],
            "gen_system": ["Be brief."] * 3,
        }
    )
    out = FromExternalPipeline().finalize(frame, FromExternalOptions(), run)
    assert list(out.dataset["id"]) == ["a"]
    assert run.dropped == {
        "from-external: empty instruction": 1,
        "from-external: empty response": 1,
    }
    assert [(d.by, d.reason, d.row["id"]) for d in out.dropped] == [
        ("pipeline from-external", "empty instruction", "b"),
        ("pipeline from-external", "empty response", "c"),
    ]
    assert out.dropped[1].row == {
        "id": "c", "gen_prompt": "Name a colour.", "gen_response": "  ", "gen_system": "Be brief."
    }  # fmt: skip
