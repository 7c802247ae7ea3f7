"""Shell completion of plugin names on the run's role flags, through the real `bashgym`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BASHGYM = Path(sys.executable).parent / "bashgym"


def complete(words: str, tmp_path: Path) -> list[str]:
    env = {
        **os.environ,
        "_BASHGYM_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [str(BASHGYM)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(not BASHGYM.exists(), reason="the bashgym script is not installed here")
def test_role_flags_complete_the_installed_plugin_names(tmp_path):
    sinks = complete("bashgym run -k ", tmp_path)
    assert {"nemo-jsonl", "parquet", "atif"} <= set(sinks)
    assert complete("bashgym run --executor stu", tmp_path) == ["student"]
    assert complete("bashgym run -e bub", tmp_path) == ["bubblewrap"]
    assert complete("bashgym run -p nothing-like-this", tmp_path) == []


@pytest.mark.skipif(not BASHGYM.exists(), reason="the bashgym script is not installed here")
def test_set_completes_the_named_plugins_options_and_the_settings_tables(tmp_path):
    source = complete("bashgym run -s files --set source.", tmp_path)
    assert {"source.path=", "source.map=", "source.columns="} <= set(source)
    assert all(target.startswith("source.") for target in source)

    everything = complete("bashgym run -s files -p samplers -k parquet --set ", tmp_path)
    assert {"source.path=", "pipeline.num_records=", "sink.shard_rows="} <= set(everything)
    assert {"designer.buffer_size=", "tasks.concurrency="} <= set(everything)  # settings tables
    assert not any(t.startswith(("executor.", "environment.", "judge.")) for t in everything)

    # several sinks: `--set` wants the plugin named, as sink.PLUGIN.KEY=VALUE
    sinks = complete("bashgym run -s files -k parquet -k nemo-jsonl --set sink.", tmp_path)
    assert "sink.parquet.shard_rows=" in sinks and "sink.nemo-jsonl.val_fraction=" in sinks
    # an executor and no -e: the default environment's options (any environment's)
    assert "environment.memory_mb=" in complete(
        "bashgym run -s prompts -x student --set environment.mem", tmp_path
    )
    assert complete("bashgym run -s files --set desi", tmp_path)[0].startswith("designer.")
    assert complete("bashgym run -s files --set nothing-like-this", tmp_path) == []

    # the run file's plugins, wherever it is on the line
    run_file = tmp_path / "run.toml"
    run_file.write_text('[source]\nplugin = "files"\n[pipeline]\nplugin = "samplers"\n')
    assert "pipeline.num_records=" in complete("bashgym run run.toml --set pipe", tmp_path)
    # flags override the run file's
    assert complete("bashgym run run.toml -p nothing-like-this --set pipe", tmp_path) == []


# Completes `words` by `main()`, then prints the plugin modules imported on stderr's last line.
PROBE = """
import json, sys
from bashgym_cli import main
sys.argv = ["bashgym"]
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("bashgym_"))), file=sys.stderr)
"""


@pytest.mark.skipif(not BASHGYM.exists(), reason="the bashgym script is not installed here")
def test_completing_options_and_names_imports_no_role_plugin(tmp_path):
    complete("bashgym run -k ", tmp_path)  # builds the index (every plugin loads, once)
    for words in ("bashgym run -s files -k parquet --set ", "bashgym run -s "):
        env = {
            **os.environ,
            "_BASHGYM_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split(" ")) - 1),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
        }
        env.pop("BASHGYM_LOAD_PLUGINS", None)
        done = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, cwd=tmp_path, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip
        assert done.stdout.split(), done.stderr
        modules = json.loads(done.stderr.strip().splitlines()[-1])
        assert "bashgym_commands_run" in modules
        unused = ["bashgym_sources_files", "bashgym_sinks_parquet", "bashgym_sources_claude_code"]
        assert not set(unused) & set(modules)
