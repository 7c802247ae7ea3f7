"""How `bashgym validate|preview|pipeline export` end when the user got something wrong: in plain
words (no Python class name), exit 2, JSON on stdout under --json, and no secret of an input on
the terminal. Real CLI, real DataDesigner, real files; the model is the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bashgym_testing.tokens import github_token

REDACTED = "[REDACTED:github-token]"


def one_line(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_export_where_no_file_can_be_made_says_why_in_words(bashgym_cli):
    """Before: `cannot write '/proc/x.yaml': FileNotFoundError: [Errno 2] No such file or
    directory: '/proc/x.yaml'`: a class name, an errno, the path twice."""
    result = bashgym_cli("pipeline", "export", "samplers", "/proc/x.yaml")

    assert result.exit_code == 2, result.output
    assert one_line(result.stderr) == (
        "error: cannot write '/proc/x.yaml': it or its folder does not exist"
    )


def test_export_whose_folder_is_a_file_says_so(bashgym_cli, tmp_path: Path):
    blocker = tmp_path / "out"
    blocker.write_text("a file where the folder should be")

    result = bashgym_cli("pipeline", "export", "samplers", str(blocker / "x.yaml"))

    assert result.exit_code == 2, result.output
    message = one_line(result.stderr)
    assert message.endswith("cannot make its folder: it is a file, where a folder is needed")
    assert "Error" not in message and "Errno" not in message


def test_validate_json_reports_a_bad_option_as_json(bashgym_cli):
    """Before: the plain `error:` line on stderr and nothing on stdout for a script to read."""
    result = bashgym_cli("validate", "samplers", "--set", "pipeline.categories=oops", "--json")

    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["valid"] is False and doc["columns"] == []
    (problem,) = doc["problems"]
    assert problem.startswith("pipeline 'samplers': categories: Input should be a valid dict")
    assert "error:" not in result.stderr


def test_validate_json_reports_a_failed_seed_as_json(bashgym_cli, tmp_path: Path):
    empty = tmp_path / "empty.csv"  # there (the options pass), with no rows: the seed fails
    empty.write_text("")

    result = bashgym_cli("validate", "samplers", "-s", "files", "--set",
                         f"source.path={empty}", "--json")  # fmt: skip

    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["valid"] is False
    assert doc["problems"] == [
        f"files source: '{empty}' has no rows (an empty file, or a header only)"
    ]
    # a path that is not there is refused with the options, and said the same way
    missing = tmp_path / "nothing-here.csv"
    result = bashgym_cli("validate", "samplers", "-s", "files", "--set",
                         f"source.path={missing}", "--json")  # fmt: skip
    assert result.exit_code == 2
    (problem,) = json.loads(result.stdout)["problems"]
    assert problem.startswith(f"source 'files': path: does not exist (got '{missing}')")


def test_preview_json_reports_an_unknown_pipeline_as_json(bashgym_cli):
    result = bashgym_cli("preview", "sampler", "--json")

    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["ok"] is False
    assert doc["error"].startswith("unknown pipeline 'sampler'. Did you mean 'samplers'?")


@pytest.mark.parametrize("as_json", [False, True])
def test_a_token_in_a_source_path_is_redacted_in_the_prepare_error(
    bashgym_cli, scripted_models, tmp_path: Path, as_json: bool
):
    """Before: `error: files source: nothing matches '.../ghp_…36 chars….csv'`: the token whole
    on the terminal, where a run prints it redacted."""
    token = github_token()
    path = tmp_path / f"{token}.csv"
    path.write_text("")  # there (the options pass), with no rows: the source's own error
    args = ["-s", "files", "--set", f"source.path={path}", *(["--json"] if as_json else [])]

    result = bashgym_cli("preview", "samplers", "-n", "1", *args)

    assert result.exit_code == 2, result.output
    assert token not in result.output
    message = json.loads(result.stdout)["error"] if as_json else one_line(result.stderr)
    assert f"'{tmp_path}/{REDACTED}.csv' has no rows" in message, message
    # not there: refused with the options, the path as redacted
    path.unlink()
    result = bashgym_cli("preview", "samplers", "-n", "1", *args)
    assert result.exit_code == 2, result.output
    assert token not in result.output
    message = json.loads(result.stdout)["error"] if as_json else one_line(result.stderr)
    assert f"path: does not exist (got '{tmp_path}/{REDACTED}.csv')" in message, message


def test_validate_shows_a_column_name_with_brackets_as_written(bashgym_cli):
    """A name in brackets is the user's text, not markup: before, the table showed the column
    `[x]` as an empty cell and the error line as `Expression column '\\[x]'` (escaped twice)."""
    result = bashgym_cli("validate", "samplers", "--set", "pipeline.expressions.[x]={{ y }}")

    assert result.exit_code == 2, result.output
    message = one_line(result.stderr)
    assert message == "error: Expression column '[x]' references missing column 'y'.", message
    assert "│ [x] " in result.stdout, result.stdout
