"""`bashgym options sink parquet` says where the files go, with and without shard_rows: what a
real run writes there is checked against the words."""

from __future__ import annotations

import json
import re
from fnmatch import fnmatch


def test_the_path_option_names_both_defaults_and_runs_write_there(bashgym_cli, bashgym_env):
    """Before: `default: RUN_DIR/data.parquet` only, where with shard_rows the files are
    RUN_DIR/parquet/part-*.parquet."""
    result = bashgym_cli("options", "sink", "parquet", "--json")
    assert result.exit_code == 0, result.output
    said = {o["option"]: o["description"] for o in json.loads(result.stdout)["options"]}
    defaults = re.findall(r"RUN_DIR/\S+?\.parquet", said["sink.path"])
    assert len(defaults) == 2, said["sink.path"]
    csv = bashgym_env.workdir / "qa.csv"
    csv.write_text("prompt,response\n" + "".join(f"q{i},a{i}\n" for i in range(5)))
    for pattern, extra in zip(defaults, ([], ["--set", "sink.shard_rows=2"]), strict=True):
        out = bashgym_env.workdir / f"run{len(extra)}"
        result = bashgym_cli(
            "run", "-s", "files", "--set", f"source.path={csv}", "-k", "parquet", *extra,
            "--out", str(out),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
        assert written and all(fnmatch(f"RUN_DIR/{w}", pattern) for w in written), written
    assert "part-00000-of-0000N.parquet" in said["sink.shard_rows"]
