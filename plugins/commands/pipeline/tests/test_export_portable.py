"""`bashgym pipeline export` of the LLM pipelines runs with plain DataDesigner.

Plain means: no BashGym DataDesigner plugin loaded. DataDesigner discovers plugins through the
`data_designer.plugins` entry points and skips them all when DISABLE_DATA_DESIGNER_PLUGINS is
true (data_designer/plugins/registry.py), so the subprocesses below see only what a venv with
just `data-designer` would have: if the export still named a `bashgym-*` type, they would fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

LLM_PIPELINES = ["coding-agent-sft", "coding-agent-dpo", "from-external", "from-unstructured"]


def plain_data_designer(home: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("data-designer")
    env = {
        **os.environ,
        "DATA_DESIGNER_HOME": str(home),
        "NEMO_TELEMETRY_ENABLED": "false",
        "DISABLE_DATA_DESIGNER_PLUGINS": "true",
    }
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def types_in(config: Path) -> set[str]:
    doc = yaml.safe_load(config.read_text())["data_designer"]
    kinds = {c["column_type"] for c in doc["columns"]}
    return kinds | {p["processor_type"] for p in doc.get("processors") or []}


@pytest.mark.slow  # four exports and one plain DataDesigner process: ~60 s on 2 busy cores
def test_llm_pipelines_export_to_configs_plain_data_designer_validates(
    bashgym_cli, bashgym_env, scripted_models
):
    args = []
    for name in LLM_PIPELINES:
        out = bashgym_env.workdir / f"{name}.yaml"
        result = bashgym_cli("pipeline", "export", name, out)
        assert result.exit_code == 0, result.output
        notes = " ".join(result.stderr.split())
        assert "pip install bashgym" not in notes  # no package that is not on PyPI
        assert not any(t.startswith("bashgym-") for t in types_in(out)), types_in(out)
        if name.startswith("coding-agent"):
            assert "validation" in types_in(out)  # ruff through DataDesigner's code validator
            assert "exported as DataDesigner's code validation column" in notes
        if name != "coding-agent-dpo":  # the filters' rules became bool columns
            assert "expression" in types_in(out) and "'keep_row'" in notes
            assert "DataDesigner has no row-filter processor" in notes
        args += [str(out), str(bashgym_env.workdir / f"{name}.dd-home")]
    # the control: a BashGym type left in a config must fail where no plugin loads
    doc = yaml.safe_load(Path(args[0]).read_text())
    doc["data_designer"]["processors"] = [
        {"name": "f", "processor_type": "bashgym-filter", "rules": [{"keep": "{{ 1 }}",
                                                                      "reason": "r"}]}
    ]  # fmt: skip
    control = bashgym_env.workdir / "control.yaml"
    control.write_text(yaml.safe_dump(doc))
    args += [str(control), args[1]]
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("plain_validate.py")), *args],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "NEMO_TELEMETRY_ENABLED": "false",
            "DISABLE_DATA_DESIGNER_PLUGINS": "true",
        },
        cwd=bashgym_env.root,
        timeout=300,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith(("valid", "invalid", "plugins"))]
    assert lines[0] == "plugins []", proc.stdout + proc.stderr
    assert lines[1:5] == [f"valid {name}" for name in LLM_PIPELINES], proc.stdout + proc.stderr
    assert lines[5].startswith("invalid control:")


@pytest.mark.slow  # plain DataDesigner generating 2 rows through the scripted server: ~15 s
def test_an_exported_filter_runs_in_plain_data_designer_as_keep_row(
    bashgym_cli, bashgym_env, scripted_models
):
    out = bashgym_env.workdir / "from-external.yaml"
    assert bashgym_cli("pipeline", "export", "from-external", out).exit_code == 0
    proc = plain_data_designer(
        bashgym_env.workdir / "from-external.dd-home",
        "create", str(out), "-n", "2", "-o", str(bashgym_env.root / "art"), "-f", "parquet",
        "--no-tui",
        cwd=bashgym_env.root,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = pd.read_parquet(bashgym_env.root / "art" / "dataset" / "dataset.parquet")
    assert len(rows) == 2 and rows["keep_row"].dtype == bool
    # the scripted judge scores every criterion the same: the rules decide, row by row
    scores = rows["gen_judge"].map(lambda j: min(int(v["score"]) for v in j.values()))
    has_text = rows["gen_response"].str.strip().str.len() > 0
    expected = (scores >= 3) & has_text & rows["gen_has_instruction"].astype(bool)
    assert list(rows["keep_row"]) == list(expected)
