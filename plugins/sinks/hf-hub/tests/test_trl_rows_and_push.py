"""Hub rows TRL takes as they are, and `bashgym push` of a finished run.

The Hub cannot be reached from here: only `HfApi.create_repo` / `HfApi.upload_folder` (the
upload call) are replaced, and the assertions read the real files the upload would have sent
back with `datasets`."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import httpx
import huggingface_hub
import pandas as pd
import pytest
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.sink import HfHubSink, default_folder
from huggingface_hub.errors import HfHubHTTPError

from bashgym import hookimpl
from bashgym.contracts import Source
from bashgym.records import Message, Outcome, ToolCall, ToolSchema, trace_to_row

READ = ToolSchema(
    name="Read",
    parameters={"type": "object", "properties": {"file_path": {"type": "string"}}},
)


def two_tool_trace(make_trace, i: int):
    """Calls to two tools with different argument keys, as every real agent trace has."""
    trace = make_trace(i)
    trace.tools.append(READ)
    trace.messages[1:1] = [
        Message(
            role="assistant",
            tool_calls=[ToolCall(id=f"r{i}", name="Read", arguments='{"file_path": "a.py"}')],
        ),
        Message(role="tool", tool_call_id=f"r{i}", content="x = 1"),
    ]
    return trace


def failed_trace(make_trace):
    trace = make_trace(99)
    trace.messages[-1] = Message(role="assistant", content="API Error: 529 overloaded_error")
    trace.outcome = Outcome(success=False, error_kind="api_error")
    return trace


@pytest.mark.parametrize("file_format", ["parquet", "jsonl"])
def test_hub_rows_carry_messages_and_tools_ready_for_trl(
    run_ctx, make_trace, tmp_path, file_format
):
    rows = [trace_to_row(two_tool_trace(make_trace, i)) for i in range(4)]
    rows.append(trace_to_row(failed_trace(make_trace)))
    written = HfHubSink().write(
        pd.DataFrame(rows), HfHubOptions(file_format=file_format), run_ctx, "traces"
    )
    assert written.rows == 4
    assert run_ctx.dropped == {"sink hf-hub: trace did not succeed (api_error)": 1}
    ds = datasets.load_dataset(
        str(default_folder(run_ctx.run_dir)), cache_dir=str(tmp_path / f"hf-{file_format}")
    )
    assert len(ds["train"]) + len(ds["validation"]) == 4  # 4 rows: neither split is empty
    row = ds["train"][0]
    assert "trace" not in row and row["success"] is not False and row["trace_id"]
    messages = row["messages"]
    assert [m["role"] for m in messages][:4] == ["system", "user", "assistant", "tool"]
    calls = [c["function"] for m in messages for c in (m.get("tool_calls") or [])]
    # each call's arguments are its own object: no key of another tool's call, no null
    assert calls[0] == {"name": "Read", "arguments": {"file_path": "a.py"}}
    assert calls[1] == {"name": "Bash", "arguments": {"command": "pytest"}}
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in row["tools"]}
    assert schemas["Read"] == READ.parameters
    assert "file_path" not in json.dumps(schemas["Bash"])


def test_openai_string_arguments_and_the_whole_trace_when_asked(run_ctx, make_trace, tmp_path):
    rows = [trace_to_row(make_trace(i)) for i in range(2)]
    options = HfHubOptions(tool_arguments="openai-string", include_trace=True, val_fraction=0)
    HfHubSink().write(pd.DataFrame(rows), options, run_ctx, "traces")
    ds = datasets.load_dataset(str(default_folder(run_ctx.run_dir)), cache_dir=str(tmp_path))
    assert list(ds) == ["train"]
    call = ds["train"][0]["messages"][2]["tool_calls"][0]["function"]
    assert call["arguments"] == '{"command": "pytest"}'
    assert json.loads(ds["train"][0]["trace"])["id"] == "trace-0"


class Hub:
    """The two Hub calls, recorded; `refuse` makes the upload fail as the Hub would."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.uploads: list[dict] = []
        self.refuse: str | None = None
        monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda api, *a, **k: None)
        monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda api, **kw: self._up(kw))

    def _up(self, kwargs: dict) -> None:
        if self.refuse:
            url = "https://huggingface.co/api/datasets/me/sft/commit/main"
            response = httpx.Response(403, request=httpx.Request("POST", url))
            raise HfHubHTTPError(self.refuse, response=response)
        self.uploads.append(kwargs)


@pytest.fixture
def finished_run(bashgym_cli, bashgym_env, register_plugin, make_trace):
    """`run(sink)`: a finished run of 6 traces (one failed) written by that sink, no push."""

    class Traces(Source):
        """A few agent traces."""

        output_format = "traces"

        def open(self, options, run):
            return iter([*(make_trace(i) for i in range(5)), failed_trace(make_trace)])

    class Plugin:
        @hookimpl
        def register_sources(self, register):
            register("push-traces", Traces())

    register_plugin(Plugin(), "push-traces-plugin")

    def run(sink: str) -> Path:
        out = bashgym_env.workdir / f"run-{sink}"
        result = bashgym_cli("run", "--source", "push-traces", "--sink", sink, "--out", out)
        assert result.exit_code == 0, result.output
        return out

    return run


def test_a_failed_trace_is_dropped_by_the_sink_stage_as_nemo_jsonl_drops_it(
    bashgym_cli, bashgym_env, finished_run
):
    """Before: `hf-hub: trace did not succeed (api_error)`, the sink's name inside the reason
    and no `by`, where nemo-jsonl says `by="sink nemo-jsonl"` and the reason alone: run.json,
    the terminal and dropped.jsonl named hf-hub's drops unlike every other sink's."""
    out = finished_run("hf-hub")  # a real run, dry: no repo id, no token, no network
    reason = "trace did not succeed (api_error)"
    summary = json.loads((out / "run.json").read_text())
    assert summary["counts"]["dropped"] == {f"sink hf-hub: {reason}": 1}
    # a trace with no file is named by its id, as nemo-jsonl names it (it had no name here)
    assert summary["dropped_rows"] == {f"sink hf-hub: {reason}": ["trace-99"]}
    lines = [json.loads(x) for x in (out / "dropped.jsonl").read_text().splitlines()]
    assert [(x["by"], x["reason"], x["row"]["row_id"]) for x in lines] == [
        ("sink hf-hub", reason, "trace-99")
    ]
    assert "hf-hub: hf-hub:" not in (out / "run.json").read_text()


@pytest.mark.slow  # two runs through the CLI: ~18 s on 2 busy cores
@pytest.mark.parametrize("sink", ["hf-hub", "nemo-jsonl"])
def test_push_publishes_a_finished_runs_rows(
    bashgym_cli, bashgym_env, finished_run, monkeypatch, sink
):
    out = finished_run(sink)
    hub = Hub(monkeypatch)
    monkeypatch.setenv("MY_TOKEN", "hf_push_s3cr3t")
    result = bashgym_cli("push", str(out), "--repo", "me/sft", "--token-env", "MY_TOKEN")
    assert result.exit_code == 0, result.output
    (upload,) = hub.uploads
    assert upload["repo_id"] == "me/sft" and upload["token"] == "hf_push_s3cr3t"
    folder = Path(upload["folder_path"])
    assert folder == out / f"hf-{out.name}"
    ds = datasets.load_dataset(str(folder), cache_dir=str(bashgym_env.cache_dir / sink))
    assert sum(len(split) for split in ds.values()) == 5  # the failed trace is no SFT row
    assert ds["train"][0]["messages"][0]["role"] == "system"
    assert "https://huggingface.co/datasets/me/sft" in result.stdout
    assert "hf_push_s3cr3t" not in result.output + (folder / "README.md").read_text()


def test_push_errors_are_one_line_exit_2_for_the_users_mistake_1_for_the_hubs(
    bashgym_cli, bashgym_env, finished_run, monkeypatch
):
    """Before: every error exited 1, a missing run dir and an unset token too, where `report`
    and `run` exit 2 for the user's mistake; a bad repo id went to the Hub first."""
    hub = Hub(monkeypatch)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    out = finished_run("hf-hub")
    nowhere = bashgym_env.workdir / "nowhere"
    not_a_run = bashgym_env.workdir
    cases = {
        "$HF_TOKEN is not set": [str(out), "--repo", "me/sft"],
        f"{nowhere} does not exist": [str(nowhere), "--repo", "me/sft"],
        "is not a run directory (no run.json)": [str(not_a_run), "--repo", "me/sft"],
        "--repo 'me/bad name' is not a Hub repo id": [str(out), "--repo", "me/bad name"],
    }
    for expected, args in cases.items():
        result = bashgym_cli("push", *args)
        assert result.exit_code == 2 and expected in result.stderr, result.output
        assert len(result.stderr.strip().splitlines()) == 1
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    hub.refuse = "403 Forbidden: you cannot write to me/sft"
    result = bashgym_cli("push", str(out), "--repo", "me/sft")
    assert result.exit_code == 1
    assert result.stderr.strip().endswith(
        "the Hub refused the upload to me/sft: 403 Forbidden: you cannot write to me/sft"
    )
    hub.refuse = None
    (out / "run.json").write_text(json.dumps({"status": "running", "outputs": {}}))
    result = bashgym_cli("push", str(out), "--repo", "me/sft")
    assert result.exit_code == 2 and "status 'running'" in result.stderr
    assert hub.uploads == []


def test_push_of_nemo_jsonl_lines_shortens_a_kept_local_path(bashgym_cli, bashgym_env, monkeypatch):
    """A nemo-jsonl run that kept `source_file` (sink.keep_fields) publishes `.../qa.csv`, as the
    hf-hub sink's own rows do: the user's home and folders never reach the Hub."""
    home = bashgym_env.workdir / "home" / "alice" / "private"
    home.mkdir(parents=True)
    pd.DataFrame(
        {"prompt": ["What is 2+2?", "Capital of France?"], "response": ["4", "Paris"]}
    ).to_csv(home / "qa.csv", index=False)
    out = bashgym_env.workdir / "run-qa"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={home / 'qa.csv'}", "-k", "nemo-jsonl",
        "--set", 'sink.keep_fields=["source_file"]', "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    written = (out / "nemo-jsonl" / "train.jsonl").read_text()
    assert str(home) in written  # the run's own file keeps the whole path: it stays here
    hub = Hub(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    result = bashgym_cli("push", str(out), "--repo", "me/qa")
    assert result.exit_code == 0, result.output
    folder = Path(hub.uploads[0]["folder_path"])
    published = "".join(p.read_text() for p in sorted((folder / "data").glob("*.jsonl")))
    assert "alice" not in published and str(home) not in published
    ds = datasets.load_dataset(str(folder), cache_dir=str(bashgym_env.cache_dir / "qa"))
    rows = [row for split in ds.values() for row in split]
    assert len(rows) == 2 and {row["source_file"] for row in rows} == {".../qa.csv"}
    # the card says so, in the words of the hf-hub sink's own card (one card.render for both)
    card = (folder / "README.md").read_text()
    assert "Local paths in `source_file` are shortened to their last part (`.../name`)." in card
    assert str(home) not in card


def test_push_card_names_no_shortened_paths_when_the_lines_have_none(
    bashgym_cli, bashgym_env, monkeypatch
):
    """Lines without a path column (nemo-jsonl's default): nothing was shortened, and the card
    does not say anything was, as the sink's card does not for rows without one."""
    source = bashgym_env.workdir / "qa.csv"
    pd.DataFrame({"prompt": ["What is 2+2?"], "response": ["4"]}).to_csv(source, index=False)
    out = bashgym_env.workdir / "run-plain"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={source}", "-k", "nemo-jsonl", "--out", out
    )
    assert result.exit_code == 0, result.output
    assert "source_file" not in (out / "nemo-jsonl" / "train.jsonl").read_text()
    hub = Hub(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    result = bashgym_cli("push", str(out), "--repo", "me/qa")
    assert result.exit_code == 0, result.output
    card = (Path(hub.uploads[0]["folder_path"]) / "README.md").read_text()
    assert "Output format: `chat`." in card and "Local paths in" not in card
