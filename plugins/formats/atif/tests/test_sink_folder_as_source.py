"""`-s atif` pointed at the folder `-k atif` wrote, through two real `bashgym run`s.

The reported case: the sink's own `manifest.json` was read as a trajectory and noted
(`.../atif/manifest.json: not a valid ATIF document`), a warning about a file the user never
made. It is skipped and counted; a truly bad JSON file beside it is still noted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from bashgym.records import trace_from_row

EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "transcripts"


def run_json(cli: Any, out: Path, *args: str) -> tuple[dict[str, Any], str]:
    """run.json of a run that ended well, and what it printed on stderr (its notes)."""
    result = cli("run", *args, "--out", out)
    assert result.exit_code == 0, result.output
    return json.loads((out / "run.json").read_text()), result.stderr


def test_the_atif_sinks_folder_reads_back_without_a_note_on_its_manifest(bashgym_cli, bashgym_env):
    work = bashgym_env.workdir
    run_json(bashgym_cli, work / "a", "-s", "claude-code", "--set", f"source.path={EXAMPLES}",
             "-k", "atif")  # fmt: skip
    folder = work / "a" / "atif"
    listing = json.loads((folder / "manifest.json").read_text())
    written = len(listing["files"])

    back, said = run_json(bashgym_cli, work / "b", "-s", "atif", "--set", f"source.path={folder}",
                    "-k", "parquet")  # fmt: skip
    assert not any("manifest.json" in n for n in back["notes"]), back["notes"]
    assert "manifest.json" not in said and "not a valid ATIF" not in said, said
    counts = back["counts"]
    assert counts["source.sink_manifests"] == 1 and "source.invalid_files" not in counts
    assert counts["source.files"] == written == counts["kept"]
    rows = pq.read_table(work / "b" / "data.parquet").to_pylist()
    assert sorted(trace_from_row(r).id for r in rows) == sorted(
        Path(name).stem for name in listing["files"]
    )

    # a file that is not ATIF beside them is still noted, a manifest.json of another shape too
    (folder / "broken.json").write_text('{"steps": [')
    (folder / "nested").mkdir()
    (folder / "nested" / "manifest.json").write_text('{"files": ["a.json"], "by": "another tool"}')
    again, said = run_json(bashgym_cli, work / "c", "-s", "atif", "--set", f"source.path={folder}",
                     "-k", "parquet")  # fmt: skip
    bad = [n for n in again["notes"] if "not a valid ATIF document" in n]
    assert sorted(n.split(": ")[0] for n in bad) == [
        str(folder / "broken.json"),
        str(folder / "nested" / "manifest.json"),
    ]
    assert said.count("not a valid ATIF document") == 2, said
    assert again["counts"]["source.invalid_files"] == 2
    assert again["counts"]["source.sink_manifests"] == 1
