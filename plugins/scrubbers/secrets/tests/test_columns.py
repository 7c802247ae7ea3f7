"""Top-level columns: a secret-named column's values and a column name that is a secret are
redacted, as a nested dict key and its value are (QA findings F2, F3). A CSV `db_password`
column or a JSONL `api_key` field holds its value bare, found by nothing but the column name."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from bashgym_scrubbers_secrets import Redactor, Scrubbing, ScrubSettings
from secrets_corpus import ALNUM, tok

from bashgym.plugins import PluginHost

# a password with the punctuation real ones have, and a key: found by the column name alone
PASSWORD = tok("columns-db-password", 18) + "%!"
API_KEY = tok("columns-api-key", 26)
HEADER_TOKEN = "ghp_" + tok("columns-header-token", 36, ALNUM)
OTHER_TOKEN = "ghp_" + tok("columns-other-token", 36, ALNUM)


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_values_under_a_secret_named_column_are_redacted_like_a_nested_keys(dtype):
    cells = [PASSWORD, "changeme", None, "${DB_PASSWORD}"]
    frame = pd.DataFrame(
        {"db_password": pd.Series(cells, dtype=dtype), "note": ["a", "b", "c", "d"]}
    )
    out, touched = Redactor().frame(frame)
    nested = [Redactor().value({"db_password": c})["db_password"] for c in cells]
    assert out["db_password"].tolist()[:2] == nested[:2] == ["[REDACTED:password]", "changeme"]
    assert pd.isna(out["db_password"][2]) and out["db_password"][3] == "${DB_PASSWORD}"
    assert touched == 1 and out["note"].tolist() == ["a", "b", "c", "d"]
    assert frame["db_password"][0] == PASSWORD  # the input frame is not changed


def test_non_string_cells_under_a_secret_name_go_as_the_dict_path_takes_them():
    """A number under a secret key is left as `_dict` leaves it; a list is scrubbed item by
    item, as any nested value."""
    frame = pd.DataFrame({"api_key": [API_KEY, 12345678, [f"key {HEADER_TOKEN}"]]})
    out, touched = Redactor().frame(frame)
    assert out["api_key"].tolist() == [
        "[REDACTED:secret]",
        12345678,
        ["key [REDACTED:github-token]"],
    ]
    assert Redactor().value({"api_key": 12345678}) == {"api_key": 12345678}
    assert touched == 2


def test_ordinary_columns_keep_their_values():
    """A column whose name only looks secret-ish keeps values that are names, not secrets."""
    frame = pd.DataFrame({"key": ["ArrowUp", "Enter"], "max_tokens": ["512", "1024"]})
    out, touched = Redactor().frame(frame)
    assert touched == 0 and out is frame


def test_a_column_named_by_a_secret_is_renamed_and_counted_once():
    frame = pd.DataFrame({HEADER_TOKEN: ["x", "y"], "prompt": ["p", "q"]})
    scrubbing = Scrubbing.open(ScrubSettings(), PluginHost().registry)
    first = scrubbing.frame(frame)
    second = scrubbing.frame(frame)  # a streamed run: another frame of the same columns
    assert list(first.columns) == list(second.columns) == ["[REDACTED:github-token]", "prompt"]
    assert first["prompt"].tolist() == ["p", "q"]
    assert HEADER_TOKEN in frame.columns  # the input frame is not changed
    report = scrubbing.report()
    assert report["redacted"] == {"github-token": 1} and report["columns_renamed"] == 1
    assert report["rows_touched"] == 4  # every row, as written, carried the name


def test_renamed_columns_stay_unique():
    frame = pd.DataFrame(
        {HEADER_TOKEN: [1], OTHER_TOKEN: [2], "[REDACTED:github-token]_2": [3], "n": [4]}
    )
    out, touched = Redactor().frame(frame)
    assert list(out.columns) == [
        "[REDACTED:github-token]",
        "[REDACTED:github-token]_3",
        "[REDACTED:github-token]_2",
        "n",
    ]
    assert out.iloc[0].tolist() == [1, 2, 3, 4] and touched == 1


def test_a_clean_frame_reports_no_renamed_columns():
    scrubbing = Scrubbing.open(ScrubSettings(), PluginHost().registry)
    scrubbing.frame(pd.DataFrame({"prompt": ["hello there"]}))
    assert "columns_renamed" not in scrubbing.report()


def _every_text(run_dir: Path) -> str:
    """Raw bytes of every file plus the decoded rows and schema of each Parquet file."""
    parts = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        parts.append(path.read_bytes().decode("utf-8", errors="replace"))
        if path.suffix == ".parquet":
            table = pq.read_table(path)
            parts += [str(table.schema), table.to_pandas().to_json()]
    return "\n".join(parts)


@pytest.mark.parametrize("suffix", ["csv", "jsonl"])
def test_a_files_run_writes_no_column_secret(bashgym_cli, bashgym_env, suffix):
    """A real `bashgym run -s files` to Parquet and nemo-jsonl (keeping the secret column):
    neither the value under `db_password`/`api_key` nor the token used as a column name is
    anywhere in the run directory."""
    rows = [
        {"prompt": "deploy", "response": "ok", "db_password": PASSWORD, "api_key": API_KEY},
        {"prompt": "roll back", "response": "done", "db_password": PASSWORD, "api_key": API_KEY},
    ]
    for i, row in enumerate(rows):
        row[HEADER_TOKEN] = f"v{i}"
    data = bashgym_env.workdir / f"data.{suffix}"
    if suffix == "csv":
        pd.DataFrame(rows).to_csv(data, index=False)
    else:
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = bashgym_env.workdir / f"run-{suffix}"
    args = ["run", "-s", "files", "--set", f"source.path={data}", "-k", "parquet"]
    args += ["-k", "nemo-jsonl", "--set", 'sink.nemo-jsonl.keep_fields=["db_password"]']
    result = bashgym_cli(*args, "--out", out)
    assert result.exit_code == 0, result.output
    written = _every_text(out)
    for secret in (PASSWORD, API_KEY, HEADER_TOKEN):
        assert secret not in written, secret
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert set(table["db_password"]) == {"[REDACTED:password]"}
    assert "[REDACTED:github-token]" in table.columns
    assert json.loads((out / "run.json").read_text())["scrub"]["columns_renamed"] == 1
