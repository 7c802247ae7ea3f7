"""A routed run: the router picks an executor per task and says why; each task's check decides
verified success; a student attempt that fails its check escalates to the teacher with the
attempt in the prompt; both rows are kept and labelled, only verified ones become SFT targets;
run.json's `routing` section says shares, verified success, escalations and savings, true to the
numbers; a resumed run runs each attempt exactly once."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from bashgym_testing import ScriptedExecutor
from bashgym_work_tasks.routing import routing_report

from bashgym import hookimpl
from bashgym.contracts import Options, Route, Router
from bashgym.events import read_events

STUDENT_COST, TEACHER_COST = 0.001, 0.01


class Student(ScriptedExecutor):
    """Writes the wanted answer, except on a `hard` task (a wrong one, and says it is done)."""

    name = "cheap"

    async def run(self, task, options, ctx):
        wrong = "hard" in task.prompt
        answer = "wrong" if wrong else task.metadata["want"]
        self.enqueue("done, trust me", write={"answer.txt": answer}, cost_usd=STUDENT_COST)
        return await super().run(task, options, ctx)


class Teacher(ScriptedExecutor):
    name = "strong"

    async def run(self, task, options, ctx):
        write = {"answer.txt": task.metadata["want"]}
        self.enqueue("solved", write=write, cost_usd=TEACHER_COST)
        return await super().run(task, options, ctx)


class WordsOptions(Options):
    student: str = "cheap"
    teacher: str = "strong"
    expert_word: str = "expert"


class Words(Router[WordsOptions]):
    """Experts go to the teacher; the rest to the student, escalating to the teacher."""

    def route(self, task, options, run):
        if options.expert_word in task.prompt:
            return Route(options.teacher, f"prompt says {options.expert_word!r}", score=0.0)
        return Route(options.student, "a plain task", score=0.9, escalate_to=options.teacher)


@pytest.fixture
def routed(tmp_path, register_plugin):
    student, teacher = Student(), Teacher()

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("cheap", student)
            register("strong", teacher)

        @hookimpl
        def register_routers(self, register):
            register("words", Words())

    register_plugin(Plugin(), "routing-test")
    tasks = pd.DataFrame(
        {
            "id": ["e1", "e2", "h1", "x1"],
            "prompt": ["write alpha", "write beta", "hard: write gamma", "expert: write delta"],
            "want": ["alpha", "beta", "gamma", "delta"],
        }
    )
    tasks["check"] = [f"grep -qx '{w}' answer.txt" for w in tasks["want"]]
    csv = tmp_path / "tasks.csv"
    tasks.to_csv(csv, index=False)
    out = tmp_path / "run"
    args = [
        "run", "-s", "files", "--set", f"source.path={csv}", "--router", "words", "-e", "local",
        "-k", "parquet", "-k", "nemo-jsonl", "--out", str(out), "-c", "1",
    ]  # fmt: skip
    return student, teacher, out, args


def test_each_task_goes_where_the_router_says_and_a_failed_check_escalates(bashgym_cli, routed):
    student, teacher, out, args = routed
    result = bashgym_cli(*args)
    assert result.exit_code == 0, result.output
    assert sorted(t.id for t in student.tasks) == ["e1", "e2", "h1"]
    assert sorted(t.id for t in teacher.tasks) == ["h1.escalated", "x1"]
    escalated = next(t for t in teacher.tasks if t.id == "h1.escalated")
    assert escalated.prompt.startswith("hard: write gamma")
    assert "by cheap" in escalated.prompt and "check failed (exit 1)" in escalated.prompt
    assert "check failed (exit 1): grep -qx 'gamma' answer.txt." in escalated.prompt  # which
    assert "done, trust me" in escalated.prompt  # the failed attempt, summarized

    rows = pd.read_parquet(out / "data.parquet").set_index("trace_id")
    assert len(rows) == 5  # both attempts of h1 are kept
    h1, again = rows.loc["h1"], rows.loc["h1.escalated"]
    assert (h1["executor"], h1["attempt"], h1["verified"]) == ("cheap", "first", False)
    assert h1["status"] == "failed" and h1["reason"].startswith("check failed (exit 1)")
    assert (again["executor"], again["attempt"], bool(again["verified"])) == (
        "strong",
        "escalated",
        True,
    )
    assert again["task_id"] == "h1" and again["route_reason"] == "escalated: a plain task"
    assert rows.loc["x1", "route_reason"] == "prompt says 'expert'"
    assert rows.loc["e1", "executor"] == "cheap" and bool(rows.loc["e1", "verified"])

    # the failed student attempt is no SFT target: four lines, h1's is the teacher's
    lines = [
        json.loads(line)
        for part in ("train", "val")
        if (out / "nemo-jsonl" / f"{part}.jsonl").is_file()
        for line in (out / "nemo-jsonl" / f"{part}.jsonl").read_text().splitlines()
    ]
    assert len(lines) == 4
    answers = [m["content"] for line in lines for m in line["messages"] if m["role"] == "assistant"]
    assert "done, trust me" in answers and answers.count("solved") == 2

    events = read_events(out / "events.jsonl")
    raw = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
    routed_events = [e for e in raw if e["type"] == "task_routed"]
    assert {(e["task_id"], e["executor"], e["attempt"]) for e in routed_events} == {
        ("e1", "cheap", "first"), ("e2", "cheap", "first"), ("h1", "cheap", "first"),
        ("x1", "strong", "first"), ("h1.escalated", "strong", "escalated"),
    }  # fmt: skip
    assert sum(e["type"] == "task_checked" and not e["passed"] for e in raw) == 1
    assert sum(e.type == "task_finished" for e in events) == 5

    routing = json.loads((out / "run.json").read_text())["routing"]
    assert routing["router"] == "words" and routing["teacher"] == "strong"
    assert routing["tasks"] == 4
    cheap, strong = routing["executors"]["cheap"], routing["executors"]["strong"]
    assert (cheap["routed"], cheap["share"], cheap["attempts"]) == (3, 0.75, 3)
    assert (cheap["checked"], cheap["verified"]) == (3, 2)
    assert (strong["routed"], strong["share"], strong["attempts"], strong["verified"]) == (
        1,
        0.25,
        2,
        2,
    )
    assert routing["escalations"] == {
        "count": 1,
        "checked": 1,
        "verified": 1,
        "verified_rate": 1.0,
    }
    assert routing["success"]["routed"] == 4 and routing["success"]["routed_rate"] == 1.0
    assert routing["success"]["retained_pct"] == 100.0
    assert routing["success"]["basis"].startswith("estimated: strong's verified rate on the 2")
    cost = routing["cost"]
    routed_usd = 3 * STUDENT_COST + 2 * TEACHER_COST
    all_teacher = 4 * TEACHER_COST  # measured on 2 tasks, their mean for the other 2
    assert cost["routed_usd"] == pytest.approx(routed_usd)
    assert cost["all_teacher_usd"] == pytest.approx(all_teacher)
    assert cost["saved_pct"] == pytest.approx(round(100 * (1 - routed_usd / all_teacher), 1))
    assert cost["basis"].startswith("estimated: measured on the 2 task(s) strong ran")


def test_a_resumed_run_adds_an_escalation_a_kill_lost_and_runs_nothing_twice(bashgym_cli, routed):
    student, teacher, out, args = routed
    assert bashgym_cli(*args).exit_code == 0
    # as if killed after h1's student attempt was kept, before its escalation was added
    with sqlite3.connect(out / "state.db") as db:
        db.execute("DELETE FROM items WHERE key = 'h1.escalated'")
    status = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**status, "status": "failed"}))
    student.tasks.clear()
    teacher.tasks.clear()
    result = bashgym_cli(*args)
    assert result.exit_code == 0, result.output
    assert student.tasks == [] and [t.id for t in teacher.tasks] == ["h1.escalated"]
    assert len(pd.read_parquet(out / "data.parquet")) == 5
    routing = json.loads((out / "run.json").read_text())["routing"]
    assert routing["escalations"]["count"] == 1 and routing["tasks"] == 4


def test_a_router_naming_an_executor_that_is_not_installed_is_refused(bashgym_cli, routed):
    _, _, _, args = routed
    result = bashgym_cli(*args, "--set", "router.teacher=nobody")
    assert result.exit_code == 2
    assert "router 'words' names executors cheap, nobody; installed executors:" in result.output


def row(task: str, executor: str, attempt: str, verified: Any, cost: Any) -> dict[str, Any]:
    return dict(task_id=task, executor=executor, attempt=attempt, verified=verified, cost_usd=cost)


def test_savings_are_unknown_when_the_teacher_ran_nothing_or_a_cost_is_unknown():
    only_student = [row("a", "s", "first", True, 0.1), row("b", "s", "first", None, 0.1)]
    report = routing_report(only_student, "r", "t")
    assert report["cost"]["all_teacher_usd"] is None and report["cost"]["saved_pct"] is None
    assert report["cost"]["basis"] == "unknown: t ran no task"
    assert report["success"]["basis"] == "unknown: t has no checked attempt in this run"
    assert report["executors"]["s"]["checked"] == 1  # a task with no check has no verdict

    unpriced = [row("a", "s", "first", True, None), row("b", "t", "first", True, 0.2)]
    report = routing_report(unpriced, "r", "t")
    assert report["cost"]["all_teacher_usd"] == pytest.approx(0.4)
    assert report["cost"]["routed_usd"] is None and report["cost"]["saved_pct"] is None
    assert "a routed attempt's cost is unknown" in report["cost"]["basis"]

    everything = [row("a", "t", "first", True, 0.2), row("b", "t", "first", False, 0.2)]
    report = routing_report(everything, "r", "t")
    assert report["cost"]["basis"] == "measured: t ran every task"
    assert report["cost"]["saved_pct"] == 0.0 and report["success"]["retained_pct"] == 100.0


def test_the_teachers_rate_is_per_task_as_the_routed_rate_is():
    """A task the teacher ran twice (failed, then passed on escalation) is one task it passed,
    as the routed rate counts it: counted per attempt, a routed run "retained" 150%."""
    rows = [
        row("a", "t", "first", False, 0.2),
        row("a", "t", "escalated", True, 0.2),
        row("b", "s", "first", True, 0.1),
    ]
    success = routing_report(rows, "r", "t")["success"]
    assert success["routed_rate"] == 1.0 and success["all_teacher_rate"] == 1.0
    assert success["retained_pct"] == 100.0


def test_a_run_file_names_a_router_like_any_role(tmp_path):
    from bashgym_cli.runs import apply_sets, load_run_file

    path = tmp_path / "run.toml"
    path.write_text('router = "words"\n[source]\nplugin = "files"\npath = "t.csv"\n')
    spec = apply_sets(load_run_file(Path(path)), ["router.teacher=strong"])
    assert spec.router.plugin == "words" and spec.router.options == {"teacher": "strong"}
    assert 'plugin = "words"' in spec.to_toml()


def answered(request: Any) -> bool:
    return bool(request.messages) and request.messages[-1].get("role") == "tool"


@pytest.mark.slow  # ~40 s here: the student's preflight is its first model call (litellm loads)
def test_the_student_against_the_scripted_server_fails_a_hard_check_and_escalates(
    bashgym_cli, scripted_models, register_plugin, tmp_path
):
    """The real student executor (its model: the scripted OpenAI server) says it is done on
    both tasks; the check finds the hard one wrong, and the teacher does it again. The
    student's price is unknown (a model no price list has), so the savings are unknown too."""
    from bashgym_testing import Reply, ToolUse

    server = scripted_models.server
    server.add_rule(answered, Reply("Done."))
    for prompt, content in (("write alpha", "alpha"), ("hard: write gamma", "wrong")):
        call = ToolUse("write_file", {"path": "answer.txt", "content": content})
        server.add_rule(prompt, Reply(tool_calls=[call]))
    teacher = Teacher()

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("strong", teacher)

        @hookimpl
        def register_routers(self, register):
            register("words", Words())

    register_plugin(Plugin(), "routing-student-test")
    csv = tmp_path / "tasks.csv"
    pd.DataFrame(
        {"id": ["e1", "h1"], "prompt": ["write alpha", "hard: write gamma"],
         "want": ["alpha", "gamma"],
         "check": ["grep -qx alpha answer.txt", "grep -qx gamma answer.txt"]}
    ).to_csv(csv, index=False)  # fmt: skip
    out = tmp_path / "run"
    result = bashgym_cli(
        "run", "-s", "files", "--set", f"source.path={csv}", "--router", "words",
        "--set", "router.student=student", "-e", "local", "-k", "parquet", "--out", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = pd.read_parquet(out / "data.parquet").set_index("trace_id")
    assert rows.loc["e1", "executor"] == "student" and bool(rows.loc["e1", "verified"])
    assert rows.loc["h1", "executor"] == "student" and rows.loc["h1", "verified"] in (False,)
    assert rows.loc["h1", "status"] == "failed"
    assert rows.loc["h1.escalated", "executor"] == "strong"
    assert [t.id for t in teacher.tasks] == ["h1.escalated"]
    assert "Done." in teacher.tasks[0].prompt  # the student's final answer, summarized
    routing = json.loads((out / "run.json").read_text())["routing"]
    assert routing["executors"]["student"]["share"] == 1.0
    assert routing["executors"]["student"]["verified"] == 1
    assert routing["success"]["routed_rate"] == 1.0
    assert routing["cost"]["routed_usd"] is None and routing["cost"]["saved_pct"] is None
    assert routing["cost"]["all_teacher_usd"] == pytest.approx(2 * TEACHER_COST)
