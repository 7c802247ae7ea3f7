"""A flag that would do nothing in the run is refused, not ignored (tester's finding): `--top-up`
with nothing generated in rounds, `-e`/`-c` with no executor to run tasks, `--backend` with
neither. Each is exit 2 and one line saying what it needs, as `--set pipeline.num_records=3`
without a pipeline already was. The same settings from a run file are named as the file's.
The runs here are the real CLI; the accepted ones really run (files source, no model)."""

from __future__ import annotations

import pytest
from bashgym_cli.runs import resolve_spec
from bashgym_commands_run.command import Origins, idle_setting

from bashgym.runspec import RunSpec, StepSpec

ROWS = "task\nfirst\nsecond\n"
COPY = ("run", "-s", "files", "--set", "source.path=rows.csv", "-k", "parquet")  # source → sink


@pytest.fixture
def rows(bashgym_env):
    (bashgym_env.workdir / "rows.csv").write_text(ROWS)


def one_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--top-up",), "error: --top-up needs a pipeline (-p) or a judge that adds columns"),
        (("-e", "local"), "error: -e local needs an executor (-x) or a router (--router)"),
        (("-c", "4"), "error: -c 4 needs an executor (-x) or a router (--router)"),
        (("--set", "tasks.concurrency=3"), "error: --set tasks.concurrency=3 needs an executor"),
        (
            ("--set", "tasks.task_timeout_s=60"),
            "error: --set tasks.task_timeout_s=60 needs an executor (-x) or a router (--router): "
            "it is each of their tasks' deadline",
        ),
        (
            ("--set", "tasks.budget_usd=2"),
            "error: --set tasks.budget_usd=2 needs an executor (-x) or a router (--router): "
            "it caps what their tasks may cost",
        ),
        (("--set", "tasks.check_timeout_s=9"), "error: --set tasks.check_timeout_s=9 needs an"),
        # a [workspace] --set is named without its value: a repository URL may hold a token
        (
            ("--set", "workspace.repo=https://x-token@example.com/r.git"),
            "error: --set workspace.repo needs an executor (-x) or a router (--router): "
            "it is where each of their tasks starts",
        ),
        (("--backend", "processes"), "error: --backend processes needs an executor (-x)"),
    ],
)
def test_a_flag_that_would_do_nothing_is_exit_2_and_one_line(bashgym_cli, rows, flags, says):
    result = bashgym_cli(*COPY, *flags, "--out", "run")
    assert result.exit_code == 2, result.output
    assert one_error(result.stderr).startswith(says), result.stderr
    assert not (result.stdout.strip() or (bashgym_cli.env.workdir / "run").exists())
    assert "x-token" not in result.output


def test_the_tasks_and_workspace_tables_are_accepted_where_an_executor_runs(bashgym_env):
    """Resolved as `bashgym run` resolves it (no task is run: that needs a model): with -x or a
    router each key acts, and nothing is refused."""
    tables = {
        "tasks": {"concurrency": 2, "task_timeout_s": 60, "budget_usd": 2.0,
                  "check_timeout_s": 9},
        "workspace": {"template": str(bashgym_env.workdir)},
    }  # fmt: skip
    (bashgym_env.workdir / "rows.csv").write_text(ROWS)
    for role in ("executor", "router"):
        spec = RunSpec(
            source=StepSpec(plugin="files", options={"path": "rows.csv"}),
            sinks=[StepSpec(plugin="parquet")],
            tables=tables,
            **{role: StepSpec(plugin="student" if role == "executor" else "confidence")},
        )
        pair = ["router.student=student", "router.teacher=claude-cli"]  # (it calls out)
        sets = [*pair, "environment.network=true"] if role == "router" else []
        _, _, resolved = resolve_spec(lambda spec=spec: spec, sets=sets)
        assert idle_setting(resolved, Origins({}, spec, None)) is None, role


def test_the_same_settings_from_a_run_file_are_named_as_the_files(bashgym_cli, rows):
    run_file = bashgym_cli.env.workdir / "run.toml"
    (bashgym_cli.env.workdir / "tpl").mkdir()  # a template that is there: refused as idle only
    for text, says in (
        ("top_up = true\n", "top_up = true in run.toml needs a pipeline"),
        ("[environment]\nplugin = 'local'\n", "[environment] in run.toml needs an executor"),
        ("[tasks]\nconcurrency = 2\n", "[tasks] concurrency in run.toml needs an executor"),
        ("concurrency = 2\n", "[tasks] concurrency in run.toml needs an executor"),  # 0.1's place
        ("[tasks]\ntask_timeout_s = 60\n", "[tasks] task_timeout_s in run.toml needs an executor"),
        ("budget_usd = 2.0\n", "[tasks] budget_usd in run.toml needs an executor"),  # 0.1's place
        ("[workspace]\ntemplate = 'tpl'\n", "[workspace] in run.toml needs an executor"),
    ):
        run_file.write_text(text)
        result = bashgym_cli("run", "run.toml", *COPY[1:], "--out", "run")
        assert result.exit_code == 2, (text, result.output)
        assert says in one_error(result.stderr), (text, result.stderr)


def test_no_top_up_and_the_flags_where_they_act_are_accepted(bashgym_cli, rows):
    """`--no-top-up` asks for nothing; `--top-up` with a pipeline, or with a run file naming
    one, runs in rounds as before; a run file's [tasks] with -x on the command line is fine."""
    plain = bashgym_cli(*COPY, "--no-top-up", "--out", "plain")
    assert plain.exit_code == 0, plain.output
    generated = bashgym_cli("run", "-p", "samplers", "-n", "2", "-k", "parquet", "--top-up",
                            "--out", "gen")  # fmt: skip
    assert generated.exit_code == 0, generated.output
    run_file = bashgym_cli.env.workdir / "gen.toml"
    run_file.write_text("[pipeline]\nplugin = 'samplers'\n[sink]\nplugin = 'parquet'\n")
    from_file = bashgym_cli("run", "gen.toml", "-n", "2", "--top-up", "--out", "gen2")
    assert from_file.exit_code == 0, from_file.output
