"""The no-model example `bashgym run examples/traces_to_sft.toml` on the shipped transcripts."""

from __future__ import annotations

import json
import shutil


def test_traces_to_sft_writes_tool_use_train_and_val(bashgym_cli, bashgym_env, repo):
    shutil.copytree(
        repo / "examples" / "transcripts", bashgym_env.workdir / "examples" / "transcripts"
    )
    shutil.copy(
        repo / "examples" / "traces_to_sft.toml",
        bashgym_env.workdir / "examples" / "traces_to_sft.toml",
    )
    out = bashgym_env.workdir / "main"
    result = bashgym_cli("run", "examples/traces_to_sft.toml", "--out", out)
    assert result.exit_code == 0, result.output

    lines = [
        json.loads(line)
        for split in ("train", "val")
        for line in (out / "nemo-jsonl" / f"{split}.jsonl").read_text().splitlines()
    ]
    sessions = list((repo / "examples" / "transcripts").glob("*/*.jsonl"))
    negatives = (out / "nemo-jsonl" / "negatives.jsonl").read_text().splitlines()
    # one session ended in an API error: no SFT target, kept as a negative with its reason
    assert len(sessions) == 6 and len(lines) == 5 and len(negatives) == 1
    for line in lines:
        roles = [m["role"] for m in line["messages"]]
        assert roles[0] == "system" and roles[-1] == "assistant" and "user" in roles
        assert line["tools"], "every tool-use line carries its tool schemas"
    assert any(m.get("tool_calls") for line in lines for m in line["messages"])
    run = json.loads((out / "run.json").read_text())
    assert run["status"] == "ok" and run["counts"]["kept"] == 5
    assert run["counts"]["dropped"] == {"sink nemo-jsonl: trace did not succeed (api_error)": 1}
    assert run["counts"]["nemo-jsonl.val"] >= 1 and "scrub" in run
