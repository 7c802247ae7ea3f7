"""Bad input, command by command and option type by option type: every case ends with exit 2
(a mistake in the command), a message on stderr naming what is wrong, and no traceback.

Each row is a real command line. They run in-process through Typer's CliRunner against a fresh
plugin host (fast); a few run as the real `bashgym` console script too (slow: a few seconds
each to start), since the one-line-and-exit-2 promise is about what a person sees in a terminal.
"""

from __future__ import annotations

import json
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from bashgym_cli import build_app
from typer.testing import CliRunner

JUNK = bytes(range(256)) * 4  # not UTF-8, not JSON, not TOML, not Parquet, not CSV
TRIPLET_COLUMNS = {
    "pair_type": ["calls"],
    "weight": [1.0],
    "source_repo": ["demo"],
    "anchor": ["def a(): b()"],
    "positive": ["def b(): pass"],
    "negative": ["def c(): pass"],
    "anchor_id": ["a"],
    "positive_id": ["b"],
    "negative_id": ["c"],
}


def _triplets(path: Path, drop: str | None = None) -> Path:
    columns = {k: v for k, v in TRIPLET_COLUMNS.items() if k != drop}
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def make_inputs(root: Path) -> None:
    """The files the table's command lines name, all under the test's working directory."""
    (root / "tasks.txt").write_text("say hi\n")
    (root / "tasks.csv").write_text("prompt\nsay hi\n")
    (root / "junk.bin").write_bytes(JUNK)
    for name in ("junk.toml", "junk.csv", "junk.json", "junk.parquet", "junk.gguf", "junk.py"):
        (root / name).write_bytes(JUNK)
    (root / "empty").mkdir()
    (root / "folder.yaml").mkdir()
    (root / "not-a-table.toml").write_text("source = 5\nsinks = ['parquet']\n")
    (root / "unknown-key.toml").write_text("sources = 'files'\n")
    (root / "inf-timeout.toml").write_text(
        "task_timeout_s = inf\n[source]\nplugin = 'prompts'\npath = 'tasks.txt'\n"
        "[executor]\nplugin = 'student'\n[sink]\nplugin = 'nemo-jsonl'\n"
    )
    (root / "nan-budget.toml").write_text(
        "budget_usd = nan\n[source]\nplugin = 'prompts'\npath = 'tasks.txt'\n"
        "[executor]\nplugin = 'student'\n[sink]\nplugin = 'nemo-jsonl'\n"
    )
    # code-graph outputs: a good Parquet beside run.json files that are not what they claim
    for folder, run_json in (("junk-json", JUNK), ("list-json", b"[1, 2]"), ("str-json", b'"x"')):
        _triplets(root / folder / "data.parquet")
        (root / folder / "run.json").write_bytes(run_json)
    _triplets(root / "bad-counts" / "data.parquet")
    (root / "bad-counts" / "run.json").write_text(json.dumps({"counts": [1], "usage": "x"}))
    for column in ("pair_type", "weight", "source_repo", "anchor"):
        _triplets(root / f"no-{column}.parquet", drop=column)
    # a run dir for `bashgym report`
    for folder, run_json in (("report-junk", JUNK), ("report-list", b"[]")):
        (root / folder).mkdir()
        (root / folder / "run.json").write_bytes(run_json)


@dataclass(frozen=True)
class Case:
    """One command line, the exit code it must give, and a phrase its message must hold."""

    id: str
    args: tuple[str, ...]
    names: str  # a regex found in stderr (case, whitespace and box-drawing folded)
    code: int = 2


def case(id: str, line: str, names: str, code: int = 2) -> Case:
    return Case(id, tuple(line.split()), names, code)


AGENT = "run -s prompts --set source.path=tasks.txt -k nemo-jsonl -x"  # + executor and flags
GEN = "run -p samplers -k parquet"  # a run that generates rows with no model
SBX = "sandbox run -e local"

# fmt: off
TABLE = [
    # the shell itself
    case("unknown-command", "nosuch", "No such command"),
    case("unknown-flag", "plugins --bogus", "No such option"),
    # run: the flags, each type
    case("run-int-abc", "run -n abc", "'abc' is not a valid int"),
    case("run-int-negative", "run -n -1", "-1"),
    case("run-int-zero", "run -c 0", "0 is not in the range"),
    case("run-int-given-float", "run --seed 1.5", "'1.5' is not a valid int"),
    # run: the run file
    case("run-file-missing", "run missing.toml", "does not exist"),
    case("run-file-is-dir", "run empty", "is a folder"),
    case("run-file-junk", "run junk.toml", "not valid TOML"),
    case("run-file-not-a-table", "run not-a-table.toml", "expected a plugin name"),
    case("run-file-unknown-key", "run unknown-key.toml", "sources"),
    case("run-file-nan-budget", "run nan-budget.toml", "budget_usd"),
    # run: names
    case("run-unknown-source", "run -s nosuch -k parquet", "nosuch"),
    case("run-unknown-sink", "run -s files --set source.path=tasks.csv -k nosuch", "nosuch"),
    case("run-unknown-pipeline", "run -p nosuch -k parquet", "nosuch"),
    case("run-unknown-executor", f"{AGENT} nosuch", "nosuch"),
    case("run-unknown-environment", f"{AGENT} student -e nosuch", "nosuch"),
    case("run-unknown-judge", f"{GEN} -j nosuch", "nosuch"),
    case("run-unknown-role", f"{GEN} --set nosuch.x=1", "nosuch"),
    case("run-unknown-option", f"{GEN} --set pipeline.nosuch=1", "nosuch"),
    case("run-needs-source", "run -x student -k parquet", "--source"),
    case("run-set-no-equals", f"{GEN} --set pipeline.num_records", "ROLE.KEY"),
    # run: option values, each type
    case("run-option-int-abc", f"{GEN} --set pipeline.num_records=abc", "num_records"),
    case("run-option-int-negative", f"{GEN} --set pipeline.num_records=-3", "num_records"),
    case("run-option-int-nan", f"{GEN} --set pipeline.num_records=nan", "not a finite number"),
    case("run-option-int-inf", f"{GEN} --set pipeline.num_records=1e999", "not a finite"),
    case("run-option-enum", f"{GEN} --set sink.compression=lz5", "compression"),
    case("run-option-bool-maybe",
         "run -s files --set source.path=tasks.csv --set source.provenance=maybe -k parquet",
         "provenance"),
    case("run-source-path-missing", "run -s files --set source.path=missing.csv -k parquet",
         "missing.csv"),
    case("run-source-path-empty-dir", "run -s files --set source.path=empty -k parquet", "empty"),
    case("run-source-junk-csv", "run -s files --set source.path=junk.csv -k parquet", "junk.csv"),
    case("run-source-junk-json", "run -s files --set source.path=junk.json -k parquet",
         "junk.json"),
    case("run-source-junk-parquet", "run -s files --set source.path=junk.parquet -k parquet",
         "junk.parquet"),
    # run: the environment's and executor's options (issue 20: "this run has no environment")
    case("run-environment-int-abc", f"{AGENT} student --set environment.memory_mb=abc",
         "environment.*memory_mb"),
    case("run-environment-float-inf", f"{AGENT} student --set environment.timeout_s=inf",
         "not a finite number"),
    case("run-environment-int-negative",
         f"{AGENT} student -e local --set environment.memory_mb=-5", "memory_mb"),
    case("run-environment-bool-maybe",
         f"{AGENT} student -e local --set environment.network=maybe", "network"),
    case("run-environment-unknown-option",
         f"{AGENT} student --set environment.nosuch=1", "environment.*nosuch"),
    case("run-environment-without-executor", f"{GEN} --set environment.memory_mb=512",
         "only a run with an executor"),
    case("run-executor-int-abc", f"{AGENT} student -e local --set executor.max_turns=abc",
         "max_turns"),
    case("run-claude-path-missing",
         f"{AGENT} claude-cli -e local --set executor.claude_path=/nonexistent/claude",
         "/nonexistent/claude"),
    case("run-claude-path-is-dir", f"{AGENT} claude-cli -e local --set executor.claude_path=empty",
         "claude_path"),
    # run: the run's own tables
    case("run-workspace-enum", f"{GEN} --set workspace.keep=maybe", "keep"),
    case("run-workspace-unknown-key", f"{GEN} --set workspace.nosuch=1", "nosuch"),
    case("run-out-is-a-file", f"{GEN} -o tasks.txt", "cannot write the run directory"),
    case("run-designer-inf", f"{GEN} --set designer.rate_limit_give_up_s=inf", "not a finite"),
    # run: --plugin
    case("run-plugin-missing-file", f"{GEN} --plugin missing.py", "missing.py"),
    case("run-plugin-not-python", f"{GEN} --plugin junk.bin", "not a Python file"),
    case("run-plugin-junk-python", f"{GEN} --plugin junk.py", "failed to import"),
    case("run-plugin-unknown-module", f"{GEN} --plugin no_such_module_x", "no_such_module_x"),
    # plugins, options, config
    case("options-unknown-role", "options nosuch files", "unknown role"),
    case("options-unknown-name", "options source nosuch", "nosuch"),
    case("config-unknown-command", "config nosuch", "No such command"),
    # preview, validate, pipeline
    case("validate-unknown-pipeline", "validate nosuch", "nosuch"),
    case("validate-unknown-option", "validate samplers --set pipeline.nosuch=1", "nosuch"),
    case("validate-option-int-abc", "validate samplers --set pipeline.num_records=abc",
         "num_records"),
    case("validate-unknown-source", "validate samplers -s nosuch", "nosuch"),
    case("validate-unknown-judge", "validate samplers -j nosuch", "nosuch"),
    case("preview-int-abc", "preview samplers -n abc", "'abc' is not a valid int"),
    case("preview-int-zero", "preview samplers -n 0", "0 is not in the range"),
    case("preview-max-chars-small", "preview samplers --max-chars 5", "5 is not in the range"),
    case("preview-source-path-missing", "preview samplers -s files --set source.path=missing.csv",
         "missing.csv"),
    case("pipeline-export-unknown", "pipeline export nosuch out.yaml", "nosuch"),
    case("pipeline-export-bad-suffix", "pipeline export samplers out.txt", "out.txt"),
    case("pipeline-export-to-dir", "pipeline export samplers empty", "empty"),
    case("pipeline-export-to-yaml-dir", "pipeline export samplers folder.yaml", "is a folder"),
    case("pipeline-export-under-a-file", "pipeline export samplers tasks.txt/out.yaml",
         "cannot make its folder"),
    # report
    case("report-missing-dir", "report missing", "missing"),
    case("report-not-a-run-dir", "report empty", "no run.json"),
    case("report-run-json-junk", "report report-junk", "run.json is not JSON"),
    case("report-run-json-list", "report report-list", "holds a JSON list"),
    # sandbox
    case("sandbox-no-command", "sandbox run", "after --"),
    case("sandbox-timeout-abc", "sandbox run --timeout abc -- true", "'abc' is not a valid float"),
    case("sandbox-timeout-negative", "sandbox run --timeout -1 -- true", "-1"),
    case("sandbox-timeout-inf", f"{SBX} --timeout inf -- true", "inf is not a number of seconds"),
    case("sandbox-timeout-nan", f"{SBX} --timeout nan -- true", "nan is not a number of seconds"),
    case("sandbox-unknown-environment", "sandbox run -e nosuch -- true", "nosuch"),
    case("sandbox-unknown-option", f"{SBX} --set nosuch=1 -- true", "nosuch"),
    case("sandbox-option-int-abc", f"{SBX} --set memory_mb=abc -- true", "memory_mb"),
    case("sandbox-option-bool-maybe", f"{SBX} --set network=maybe -- true", "network"),
    case("sandbox-option-float-1e999", f"{SBX} --set timeout_s=1e999 -- true", "not a finite"),
    case("sandbox-option-float-inf", f"{SBX} --set timeout_s=inf -- true", "not a finite"),
    case("sandbox-set-no-equals", f"{SBX} --set memory_mb -- true", "KEY=VALUE"),
    case("sandbox-workdir-missing", f"{SBX} --workdir missing -- true", "missing"),
    case("sandbox-workdir-is-file", f"{SBX} --workdir tasks.txt -- true", "tasks.txt"),
    # serve (bashgym-models-embedded): only what is refused before a server starts
    case("serve-port-abc", "serve --port abc", "'abc' is not a valid int"),
    case("serve-engine-unknown", "serve --engine nosuch", "nosuch"),
    case("serve-ctx-small", "serve --ctx 10", "10 is not in the range"),
    case("serve-model-missing", "serve --model missing.gguf", "missing.gguf"),
    case("serve-model-is-dir", "serve --model empty", "empty"),
    # graph (bashgym-pipelines-code-graph)
    case("graph-stats-missing", "graph stats missing", "does not exist"),
    case("graph-stats-empty-dir", "graph stats empty", "no Parquet"),
    case("graph-stats-junk-parquet", "graph stats junk.parquet", "not a readable Parquet"),
    case("graph-stats-run-json-junk", "graph stats junk-json", "Invalid JSON"),
    case("graph-stats-run-json-list", "graph stats list-json", "run.json"),
    case("graph-stats-run-json-string", "graph stats str-json", "run.json"),
    case("graph-stats-run-json-bad-counts", "graph stats bad-counts", "counts"),
    case("graph-stats-no-pair-type", "graph stats no-pair_type.parquet", "no pair_type column"),
    case("graph-stats-no-source-repo", "graph stats no-source_repo.parquet", "no source_repo"),
    case("graph-inspect-missing", "graph inspect missing", "does not exist"),
    case("graph-inspect-junk-parquet", "graph inspect junk.parquet", "not a readable Parquet"),
    case("graph-inspect-rows-abc", "graph inspect junk-json -n abc", "'abc' is not a valid int"),
    case("graph-inspect-rows-zero", "graph inspect junk-json -n 0", "0 is not in the range"),
    case("graph-inspect-no-pair-type", "graph inspect no-pair_type.parquet", "no pair_type"),
    case("graph-inspect-no-weight", "graph inspect no-weight.parquet", "no weight column"),
    case("graph-inspect-no-anchor", "graph inspect no-anchor.parquet", "no anchor column"),
    case("graph-inspect-width-zero", "graph inspect junk-json --width 0", "0 is not in the range"),
    # refused by the kernel's RunSpec (core/runspec.py)
    case("run-file-inf-timeout", "run inf-timeout.toml", "task_timeout_s"),
]
# fmt: on


BOX = re.compile(r"[\u2500-\u257f]+")
PROGRESS = re.compile(r"\[\d+:\d\d\] ")  # a run's plain progress line, `[0:00] source: started`


def folded(text: str) -> str:
    """Box-drawing characters and line wraps (Typer's rich error panel) folded to spaces."""
    return " ".join(BOX.sub(" ", text).split()).lower()


@pytest.fixture
def cli_in(bashgym_env, bashgym_host):
    make_inputs(bashgym_env.workdir)

    def invoke(args: tuple[str, ...]):
        return CliRunner().invoke(build_app(bashgym_host), list(args), catch_exceptions=True)

    return invoke


@pytest.mark.parametrize("row", [pytest.param(c, id=c.id) for c in TABLE])
def test_bad_input_is_one_line_and_exit_2(cli_in, row: Case) -> None:
    result = cli_in(row.args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        tb = "".join(traceback.format_exception(result.exception))
        pytest.fail(f"bashgym {' '.join(row.args)} raised:\n{tb}")
    assert "Traceback" not in result.output
    assert result.exit_code == row.code, (result.exit_code, result.output)
    assert re.search(row.names.lower(), folded(result.stderr)), result.stderr
    assert_one_message(result.stderr)


def assert_one_message(stderr: str) -> None:
    """BashGym's own errors are one `error: ...` line, the last (a run that had started has
    its progress lines above it); Click's usage errors (a bad flag value) are its usual
    `Usage:` line, `Try ... --help` and the message in a panel."""
    if stderr.startswith("Usage:"):
        return
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), stderr
    assert all(PROGRESS.match(line) for line in lines[:-1]), stderr


SETTINGS = {
    "junk": (JUNK, "not valid TOML"),
    "wrong-type": (b"[models.default]\nprovider = 5\n", "models.default.provider"),
    "unknown-key": (b"[nosuch]\nx = 1\n", "nosuch"),
}


@pytest.mark.parametrize("settings", list(SETTINGS))
@pytest.mark.parametrize(
    "line", ["config show", "models", f"{GEN}", "validate samplers", "serve --port 1"]
)
def test_a_bad_settings_file_stops_every_command_that_reads_it(cli_in, settings, line):
    content, names = SETTINGS[settings]
    (Path.cwd() / "bashgym.toml").write_bytes(content)
    result = cli_in(tuple(line.split()))
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    assert result.exit_code == 2, result.output
    assert names.lower() in folded(result.stderr) and "bashgym.toml" in result.stderr
    assert_one_message(result.stderr)


SUBPROCESS_CASES = [
    c for c in TABLE if c.id in {
        "run-file-junk",
        "run-environment-int-abc",
        "graph-stats-run-json-junk",
        "sandbox-timeout-abc",
    }
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("row", [pytest.param(c, id=c.id) for c in SUBPROCESS_CASES])
def test_bad_input_in_a_real_terminal_process(bashgym_cli, row: Case) -> None:
    make_inputs(bashgym_cli.env.workdir)
    result = bashgym_cli.subprocess(*row.args, timeout=120)
    assert "Traceback" not in result.output
    assert result.exit_code == row.code, (result.exit_code, result.output)
    assert re.search(row.names.lower(), folded(result.stderr)), result.stderr
