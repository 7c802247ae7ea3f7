"""Run files and flags produce the same spec; --set addresses options by role; bad files say why."""

from __future__ import annotations

import pytest
from bashgym_cli.runs import apply_sets, load_run_file, parse_value, spec_from_dict

from bashgym.runspec import RunConfigError, RunSpec, StepSpec


def test_run_file_and_flags_give_the_same_spec(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text(
        'num_records = 5\n[source]\nplugin = "files"\npath = "a.csv"\n'
        '[pipeline]\nplugin = "samplers"\n[sink]\nplugin = "parquet"\n'
    )
    from_file = load_run_file(path)
    from_flags = apply_sets(
        RunSpec(
            source=StepSpec(plugin="files"),
            pipeline=StepSpec(plugin="samplers"),
            sinks=[StepSpec(plugin="parquet")],
            num_records=5,
        ),
        ["source.path=a.csv"],
    )
    assert from_file == from_flags
    assert spec_from_dict({}).sinks == []


def test_to_toml_round_trips(tmp_path):
    spec = RunSpec(
        source=StepSpec(plugin="files", options={"path": "x", "map": {"a": "b"}}),
        sinks=[StepSpec(plugin="parquet"), StepSpec(plugin="other", options={"k": 1})],
        judges=[StepSpec(plugin="j")],
        num_records=3,
        plugins=["p.py"],
    )
    path = tmp_path / "again.toml"
    path.write_text(spec.to_toml())
    again = load_run_file(path)
    assert again.model_copy(update={"plugins": ["p.py"]}) == spec
    assert again.plugins == [str(tmp_path / "p.py")]  # local plugin files resolve next to the file


@pytest.mark.parametrize(
    "text,value",
    [
        ("0.1", 0.1),
        ("50", 50),
        ("true", True),
        ('["a","b"]', ["a", "b"]),
        ("[1, 2]", [1, 2]),
        ("data/dir", "data/dir"),
        ("{a = 1}", {"a": 1}),
    ],
)
def test_parse_value(text, value):
    assert parse_value(text) == value


def test_set_addresses_roles_and_needs_a_name_when_several():
    spec = RunSpec(
        source=StepSpec(plugin="files"), sinks=[StepSpec(plugin="parquet"), StepSpec(plugin="nemo")]
    )
    spec = apply_sets(spec, ["source.map.prompt=question", "sink.parquet.shard_rows=5"])
    assert spec.source.options == {"map": {"prompt": "question"}}
    assert spec.sinks[0].options == {"shard_rows": 5}
    with pytest.raises(RunConfigError, match="several sinks"):
        apply_sets(spec, ["sink.shard_rows=5"])
    with pytest.raises(RunConfigError, match="no pipeline"):
        apply_sets(spec, ["pipeline.num_records=3"])
    with pytest.raises(RunConfigError, match=r"ROLE\.KEY=VALUE"):
        apply_sets(spec, ["bogus"])


def test_bad_run_files(tmp_path):
    with pytest.raises(RunConfigError, match="does not exist"):
        load_run_file(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[source\n")
    with pytest.raises(RunConfigError, match="not valid TOML"):
        load_run_file(bad)
    bad.write_text('[source]\npath = "x"\n')
    with pytest.raises(RunConfigError, match=r"\[source\]: expected a plugin name"):
        load_run_file(bad)
    bad.write_text('[sink]\nplugin = "a"\n[[sinks]]\nplugin = "b"\n')
    with pytest.raises(RunConfigError, match="either"):
        load_run_file(bad)
    bad.write_text("num_record = 3\n")
    with pytest.raises(
        RunConfigError, match=r"num_record: unknown option \(did you mean 'num_records'\?\)"
    ):
        load_run_file(bad)


def test_environment_options_without_an_environment_go_to_the_default_one():
    spec = RunSpec(source=StepSpec(plugin="prompts"), executor=StepSpec(plugin="student"))
    asked = []

    def default() -> str:
        asked.append(True)
        return "local"

    done = apply_sets(spec, ["environment.memory_mb=512"], default_environment=default)
    assert done.environment == StepSpec(plugin="local", options={"memory_mb": 512})
    assert spec.environment is None  # the spec given is left as it was
    named = spec.model_copy(update={"environment": StepSpec(plugin="bubblewrap")})
    again = apply_sets(named, ["environment.network=true"], default_environment=default)
    assert again.environment == StepSpec(plugin="bubblewrap", options={"network": True})
    assert asked == [True]  # only asked when the run names none
    with pytest.raises(RunConfigError, match="only a run with an executor"):
        apply_sets(RunSpec(pipeline=StepSpec(plugin="samplers")), ["environment.memory_mb=1"])


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999", "Infinity", "infinity"])
def test_non_finite_numbers_are_refused(value):
    spec = RunSpec(source=StepSpec(plugin="files"), executor=StepSpec(plugin="student"))
    for target in ("source.limit", "designer.rate_limit_give_up_s"):
        with pytest.raises(RunConfigError, match="is not a finite number"):
            apply_sets(spec, [f"{target}={value}"], default_environment=lambda: "local")


def test_the_memory_mb_of_the_default_environment_reaches_the_resolved_run(bashgym_cli):
    """`-x student --set environment.memory_mb=...` with no -e: the value is the resolved
    environment's, checked as its own (issue 20 said "this run has no environment")."""
    from bashgym_cli.runs import resolve_spec

    from bashgym.runspec import default_environment

    (bashgym_cli.env.workdir / "tasks.txt").write_text("say hi\n")  # the source checks it
    spec = RunSpec(
        source=StepSpec(plugin="prompts", options={"path": "tasks.txt"}),
        executor=StepSpec(plugin="student"),
        sinks=[StepSpec(plugin="nemo-jsonl")],
    )
    _, _, resolved = resolve_spec(lambda: spec, sets=["environment.memory_mb=640"])
    assert resolved.environment is not None
    assert resolved.environment.name == default_environment(bashgym_cli.host.registry)
    assert resolved.environment.options.memory_mb == 640


def test_a_refused_value_is_quoted_redacted(bashgym_cli, bashgym_env):
    """A bad option value is quoted in the error (`got '…'`): a token typed into --set is
    redacted there, as it would be in any file of the run."""
    from bashgym_testing.tokens import github_token

    token = github_token()
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.format={token}", "-k", "parquet",
        "--out", str(bashgym_env.workdir / "never"),
    )  # fmt: skip
    assert result.exit_code == 2
    assert "format:" in result.output and "[REDACTED:github-token]" in result.output
    assert token not in result.output
    assert not (bashgym_env.workdir / "never").exists()


def test_a_number_of_rows_past_any_run_is_one_line_exit_2(bashgym_cli, bashgym_env):
    """`-n 10**23` crashed deep in pandas with a 280-line traceback after the run had started;
    it is a typo, refused before a run folder exists."""
    out = bashgym_env.workdir / "huge"
    result = bashgym_cli("run", "-p", "samplers", "-n", str(10**23), "-k", "parquet", "--out", out)
    assert result.exit_code == 2, result.output
    assert "num_records: Input should be less than or equal to 1000000000" in result.output
    assert "Traceback" not in result.output and not out.exists()
