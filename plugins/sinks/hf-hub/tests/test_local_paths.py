"""No absolute local path in a Hub folder's rows, through a real `bashgym run` and `datasets`.

The reported case: the card says "local paths shortened", yet every row carried
`source_file: /tmp/x/in/qa.csv` (and trace rows the agent's `project` directory), which a push
would publish. Rows and card now shorten them alike (`.../qa.csv`); the run's own files and the
parquet sink, which stay on the machine, keep the whole path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq
from bashgym_sinks_hf_hub.paths import short_path

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "transcripts"


def hub_run(cli: Any, out: Path, *args: str) -> tuple[datasets.DatasetDict, str]:
    """The rows `datasets` loads from the run's hf-hub folder, and the folder's card."""
    result = cli("run", *args, "-k", "hf-hub", "-k", "parquet", "--out", out)
    assert result.exit_code == 0, result.output
    folder = out / f"hf-{out.name}"
    loaded = datasets.load_dataset(str(folder), cache_dir=str(out.parent / "hf-cache"))
    return loaded, (folder / "README.md").read_text()


def rows(loaded: datasets.DatasetDict) -> list[dict[str, Any]]:
    return [row for split in loaded.values() for row in split]


def test_files_rows_carry_the_file_name_as_the_card_does(bashgym_cli, bashgym_env):
    source = bashgym_env.workdir / "in" / "qa.csv"
    source.parent.mkdir()
    source.write_text("prompt,response\nWhat is 2+2?,4\nCapital of France?,Paris\nSky?,blue\n")
    out = bashgym_env.workdir / "qa"
    loaded, card = hub_run(
        bashgym_cli, out, "-s", "files", "--set", f"source.path={source}", "-k", "nemo-jsonl"
    )
    assert [r["source_file"] for r in rows(loaded)] == [".../qa.csv"] * 3
    assert 'path = ".../qa.csv"' in card  # the card's config says the same
    assert "Local paths in `source_file` are shortened to their last part" in card
    assert str(source.parent) not in card
    for path in (out / f"hf-{out.name}").rglob("*"):
        assert not path.is_file() or str(source.parent).encode() not in path.read_bytes(), path
    # what stays on the machine keeps the path a user finds the row by
    assert set(pq.read_table(out / "data.parquet")["source_file"].to_pylist()) == {str(source)}
    # the split is made from the rows as they came, so a row is in nemo-jsonl's split too
    nemo = out / "nemo-jsonl"
    val = [json.loads(x)["messages"][0]["content"] for x in (nemo / "val.jsonl").open()]
    assert val and sorted(loaded["validation"]["prompt"]) == sorted(val)


def test_trace_rows_carry_no_project_directory(bashgym_cli, bashgym_env):
    out = bashgym_env.workdir / "cc"
    loaded, card = hub_run(bashgym_cli, out, "-s", "claude-code", "--set",
                           f"source.path={EXAMPLES}")  # fmt: skip
    hub = rows(loaded)
    local = pq.read_table(out / "data.parquet").to_pylist()
    whole = {r["trace_id"]: r for r in local}
    assert len(hub) == 5  # six sessions, one ending on an API error
    for row in hub:
        kept = whole[row["trace_id"]]
        assert kept["project"].startswith("/") and kept["source_file"].startswith(str(EXAMPLES))
        assert row["project"] == short_path(kept["project"]) == f".../{Path(kept['project']).name}"
        assert row["source_file"] == f".../{Path(kept['source_file']).name}"
    assert "Local paths in `source_file` and `project` are shortened" in card
    assert str(EXAMPLES) not in card
    run = json.loads((out / "run.json").read_text())  # the run's own record keeps whole paths
    assert run["counts"]["hf-hub.train"] + run["counts"]["hf-hub.validation"] == 5
