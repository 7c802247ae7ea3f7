"""`bashgym graph inspect --type` on a real run dir: a type that is no pair type is refused
with the valid ones; a real type the data has none of is an answer, not an error."""

from __future__ import annotations

import json


def test_an_unknown_type_is_refused_with_the_valid_ones(bashgym_cli, sample_repo, tmp_path):
    """Before: `--type nope` printed `0 of 0 rows` and exited 0, as if there were none."""
    out = tmp_path / "run"
    result = bashgym_cli(  # qa=false: no model is asked
        "run", "-s", "code-repo", "--set", f"source.path={json.dumps([str(sample_repo)])}",
        "-p", "code-graph-pairs", "--set", "pipeline.qa=false", "-k", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    refused = bashgym_cli("graph", "inspect", out, "--type", "nope")
    assert refused.exit_code == 2, refused.output
    assert refused.stdout == "" and refused.stderr.count("\n") == 1
    said = refused.stderr
    assert "--type 'nope' is not a pair type" in said
    for kind in ("calls", "contains", "docstring", "imports", "inherits", "same_file", "qa",
                 "co_relevant"):  # fmt: skip
        assert kind in said
    # what this run made: the structural types, no Q&A in a qa=false run
    assert said.rstrip().endswith(
        "(this data holds calls, contains, docstring, imports, inherits, same_file)"
    )
    # a type the pipeline makes but this run has none of (no Q&A asked): 0 rows, exit 0
    none = bashgym_cli("graph", "inspect", out, "--type", "qa")
    assert none.exit_code == 0 and none.stdout.startswith("0 of 0 rows"), none.output
    shown = bashgym_cli("graph", "inspect", out, "--type", "calls", "-n", "1")
    assert shown.exit_code == 0 and shown.stdout.startswith("1 of 9 rows"), shown.output
