"""The plan: validation (every problem named), plan.json read back and re-validated, the
critical path, shared files, and the plan shown for approval."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from bashgym_orchestrator.plan import (
    PLAN_SCHEMA,
    Plan,
    PlanError,
    PlannedTask,
    critical_path,
    cycles,
    file_overlaps,
    read_plan,
    validate_plan,
    write_plan,
)
from bashgym_orchestrator.show import plan_text, show
from rich.console import Console


def task(tid: str, *deps: str, **fields: Any) -> PlannedTask:
    fields = {"title": f"do {tid}", "prompt": f"do {tid}", **fields}
    return PlannedTask(id=tid, depends_on=list(deps), **fields)


def plan(*tasks: PlannedTask) -> Plan:
    return Plan(title="t", tasks=list(tasks), planner="test")


def test_a_valid_plan_has_no_errors():
    assert validate_plan(plan(task("a"), task("b", "a"), task("c", "a", "b")), 10) == []


def test_every_problem_is_named():
    bad = plan(
        task("a", "a"),
        task("b", "zz"),
        task("b"),
        task("../x"),
        task("-rf"),
        task("x.lock"),
        task("integration"),
        task("empty", prompt="   "),
        task("rich", budget_usd=7),
    )
    assert validate_plan(bad, 5) == [
        "task id 'b' is used by 2 tasks",
        "task 'a' depends on itself",
        "task 'b' depends on 'zz', which is not a task",
        "task id '../x' is not a safe name (1 to 64 of A-Z a-z 0-9 . _ -, starting with a "
        "letter or digit, no '..', not ending in '.' or '.lock')",
        "task id '-rf' is not a safe name (1 to 64 of A-Z a-z 0-9 . _ -, starting with a "
        "letter or digit, no '..', not ending in '.' or '.lock')",
        "task id 'x.lock' is not a safe name (1 to 64 of A-Z a-z 0-9 . _ -, starting with a "
        "letter or digit, no '..', not ending in '.' or '.lock')",
        "task id 'integration' is reserved (the job's merge branch)",
        "task 'empty' has an empty prompt",
        "task 'rich' has a budget of $7, over the job's cap of $5",
        "the tasks' budgets add up to $15, over the job's cap of $5",
    ]
    assert validate_plan(plan()) == ["the plan has no tasks"]


def test_cycles_are_named_one_per_group():
    looped = plan(
        task("a", "b"), task("b", "c"), task("c", "a"), task("d", "e"), task("e", "d"), task("f")
    )
    errors = validate_plan(looped)
    assert errors == [
        "dependency cycle: a -> b -> c -> a (each depends on the next)",
        "dependency cycle: d -> e -> d (each depends on the next)",
    ]
    assert [sorted(c) for c in cycles(looped)] == [["a", "b", "c"], ["d", "e"]]


def test_a_long_cycle_is_found_without_recursion_and_named_by_its_ends():
    n = 5000
    chain = plan(*[task(f"t{i}", f"t{(i - 1) % n}") for i in range(n)])
    (error,) = validate_plan(chain)
    assert error.startswith("dependency cycle: t0 -> t4999 -> t4998")
    assert f"... {n - 10} more ..." in error and len(error) < 200


def test_budgets_within_the_cap_pass():
    assert validate_plan(plan(task("a", budget_usd=2.5), task("b", budget_usd=2.5)), 5) == []


def test_critical_path_follows_estimated_turns():
    p = plan(
        task("a", estimated_turns=3),
        task("b", "a", estimated_turns=2),
        task("c", estimated_turns=10),
        task("d", "b", "c", estimated_turns=1),
    )
    assert critical_path(p) == ["c", "d"]
    assert critical_path(plan()) == []


def test_file_overlaps_name_the_shared_files():
    p = plan(
        task("a", files=["src/app.py", "./README.md"]),
        task("b", files=["src/app.py", "src/cli.py"]),
        task("c", files=["src/"]),
        task("d", files=["docs/x.md"]),
        task("e", files=["README.md"]),
    )
    assert file_overlaps(p) == [
        ("a", "b", ["src/app.py"]),
        ("a", "c", ["src/app.py"]),
        ("a", "e", ["README.md"]),
        ("b", "c", ["src/app.py", "src/cli.py"]),
    ]


def test_plan_json_round_trips_and_is_revalidated(tmp_path: Path):
    p = plan(task("a", check="pytest"), task("b", "a", priority="high"))
    path = tmp_path / "job" / "plan.json"
    write_plan(p, path)
    assert read_plan(path) == p
    assert [f.name for f in path.parent.iterdir()] == ["plan.json"]  # no temporary left
    data = json.loads(path.read_text())
    data["tasks"][0]["depends_on"] = ["b"]  # a hand edit that makes a cycle
    data["tasks"][1]["priority"] = "urgent"
    data["tasks"][1]["budget"] = 3
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError) as caught:
        read_plan(path)
    assert str(caught.value).startswith(f"{path}: tasks[1] 'b': priority: Input should be")
    assert "tasks[1] 'b': budget: unknown key" in str(caught.value)
    data["tasks"][1] |= {"priority": "high"}
    del data["tasks"][1]["budget"]
    path.write_text(json.dumps(data))
    with pytest.raises(PlanError) as caught:
        read_plan(path, cap_usd=1.5)
    assert caught.value.errors == [
        "dependency cycle: a -> b -> a (each depends on the next)",
        "the tasks' budgets add up to $2, over the job's cap of $1.5",
    ]


def test_read_plan_names_a_broken_file(tmp_path: Path):
    path = tmp_path / "plan.json"
    path.write_text("{not json")
    with pytest.raises(PlanError, match=r"plan.json: not valid JSON"):
        read_plan(path)
    with pytest.raises(PlanError, match="no such plan file"):
        read_plan(tmp_path / "missing.json")


def test_the_schema_asks_for_every_task_field():
    item = PLAN_SCHEMA["properties"]["tasks"]["items"]
    assert set(item["required"]) == set(PlannedTask.model_fields) - {"check"}
    assert item["properties"]["priority"]["enum"] == ["critical", "high", "normal", "low"]


def approval_plan() -> Plan:
    return plan(
        task("core", priority="high", estimated_turns=4, files=["src/core.py"]),
        task("cli", "core", estimated_turns=3, files=["src/core.py", "src/cli.py"]),
        task("docs", priority="low", files=["src/cli.py"], budget_usd=0.25, estimated_turns=1),
    )


def test_show_plain_text_when_not_a_terminal():
    out = io.StringIO()
    show(approval_plan(), cap_usd=2.0, file=out)
    text = out.getvalue()
    assert text == plan_text(approval_plan(), cap_usd=2.0)
    assert "\x1b[" not in text
    lines = text.splitlines()
    assert lines[0] == "Plan: t (3 tasks; planner test; not approved)"
    assert lines[1].split() == ["id", "priority", "depends", "on", "turns", "budget", "title"]
    assert lines[3].split() == ["cli", "normal", "core", "3", "$1.00", "do", "cli"]
    assert "Critical path: core -> cli (7 estimated turns)" in lines
    assert "Total budget: $2.25 of a $2 cap" in lines
    assert "  core & cli: src/core.py (cli starts from core's work)" in lines
    assert "  cli & docs: src/cli.py (may conflict: they run side by side)" in lines
    assert "  - the tasks' budgets add up to $2.25, over the job's cap of $2" in lines


def test_show_a_table_on_a_terminal():
    out = io.StringIO()
    shown = approval_plan()
    shown.tasks[2].title = "document [bold]--verbose[/bold]"  # text, never markup
    show(shown, console=Console(file=out, force_terminal=True, width=120))
    text = out.getvalue()
    assert "┃" in text and "Critical path: core -> cli" in text
    assert "document [bold]--verbose[/bold]" in text
    assert "Not approved yet" in text and "Problems" not in text
