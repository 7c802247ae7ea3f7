"""The one required option, `csv`, says how to set it wherever it is missing, as a bad path
does ("(set pipeline.csv)"), instead of pydantic's bare "csv: Field required"."""

from __future__ import annotations

import json

import pytest
from bashgym_pipelines_csv_triangulation.options import CSV_REQUIRED

HOW = f"csv: {CSV_REQUIRED}"


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "csv-triangulation"],
        ["validate", "csv-triangulation", "--set", "pipeline.csv="],
        ["pipeline", "export", "csv-triangulation", "out.yaml"],
    ],
)
def test_a_missing_csv_says_how_to_set_it_in_one_line(bashgym_cli, args):
    result = bashgym_cli(*args)
    assert result.exit_code == 2, result.output
    assert HOW in result.output and "set pipeline.csv=PATH" in HOW
    assert "Field required" not in result.output and "Traceback" not in result.output


def test_pipeline_list_says_how_to_set_it(bashgym_cli):
    result = bashgym_cli("pipeline", "list", "--json")
    assert result.exit_code == 0, result.output
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert listed["csv-triangulation"]["error"] == f"needs options: {HOW}"


def test_the_option_is_still_listed_as_required(bashgym_cli):
    result = bashgym_cli("options", "pipeline", "csv-triangulation", "--json")
    assert result.exit_code == 0, result.output
    rows = {row["option"]: row for row in json.loads(result.stdout)["options"]}
    assert rows["pipeline.csv"]["required"] is True
