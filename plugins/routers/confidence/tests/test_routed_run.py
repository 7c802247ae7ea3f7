"""The loop through real runs: a run whose tasks all try the student first (and escalate), a
router fitted on its checked outcomes, and a second run that the fitted router routes."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from bashgym_testing import ScriptedExecutor

from bashgym import hookimpl

HARD = (
    "Refactor the connection pool for concurrency and debug the deadlock in src/pool/{0}.py, "
    "src/pool/locks.py and src/net/client.py; migrate the cache across the services. "
)


class Cheap(ScriptedExecutor):
    """The student: writes the wanted answer, except on a refactoring (a wrong one)."""

    async def run(self, task, options, ctx):
        answer = "wrong" if task.prompt.startswith("Refactor") else task.metadata["want"]
        self.enqueue("done", write={"answer.txt": answer}, cost_usd=0.001)
        return await super().run(task, options, ctx)


class Strong(ScriptedExecutor):
    """The teacher: always right, ten times the price."""

    async def run(self, task, options, ctx):
        self.enqueue("solved", write={"answer.txt": task.metadata["want"]}, cost_usd=0.01)
        return await super().run(task, options, ctx)


def tasks_csv(path: Path, ids: list[str]) -> Path:
    """Tasks `e…` (one-line edits) and `h…` (refactorings), each with a check."""
    prompts = [f"Write {i} into answer.txt." if i[0] == "e" else HARD.format(i) for i in ids]
    frame = pd.DataFrame({"id": ids, "prompt": prompts, "want": ids})
    frame["check"] = [f"grep -qx '{i}' answer.txt" for i in ids]
    frame.to_csv(path, index=False)
    return path


@pytest.mark.slow  # two agent runs through the whole CLI (~30 s on a busy 2-core machine)
def test_fit_on_a_run_then_route_the_next(bashgym_cli, register_plugin, tmp_path) -> None:
    cheap, strong = Cheap(), Strong()

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("cheap", cheap)
            register("strong", strong)

    register_plugin(Plugin(), "confidence-loop-test")
    common = ["--router", "confidence", "--set", "router.student=cheap", "--set",
              "router.teacher=strong", "-e", "local", "-k", "parquet", "-c", "2"]  # fmt: skip

    # 1. every task tries the student first (threshold 0); the failed ones escalate
    first = tmp_path / "first"
    ids = ["e1", "e2", "e3", "e4", "h1", "h2", "h3", "h4"]
    source = ["-s", "files", "--set", f"source.path={tasks_csv(tmp_path / 'a.csv', ids)}"]
    done = bashgym_cli("run", *source, *common, "--set", "router.threshold=0", "--out", first)
    assert done.exit_code == 0, done.output
    routing = json.loads((first / "run.json").read_text())["routing"]
    assert routing["executors"]["cheap"]["routed"] == 8
    assert routing["escalations"]["count"] == 4 and routing["escalations"]["verified"] == 4

    # 2. fit on its verified outcomes: half the tasks to the teacher; the student and the
    #    teacher are the ones the run recorded (no --student/--teacher needed)
    model = tmp_path / "router.json"
    done = bashgym_cli("router", "fit", first, "--target", "teacher-share=0.5", "--out", model)
    assert done.exit_code == 0, done.output
    assert "student 'cheap', teacher 'strong'" in done.stdout
    fitted = json.loads(model.read_text())
    student, teacher = fitted["training"]["student"], fitted["training"]["teacher"]
    assert (student["outcomes"], student["passed"]) == (8, 4)
    assert (teacher["outcomes"], teacher["passed"]) == (4, 4)  # the escalations
    assert (student["cost_usd"], teacher["cost_usd"]) == pytest.approx((0.001, 0.01))
    assert "0.5-quantile" in done.stdout

    # 3. new tasks like them: refactorings straight to the teacher, edits to the student
    cheap.tasks.clear()
    strong.tasks.clear()
    second = tmp_path / "second"
    source = ["-s", "files", "--set", f"source.path={tasks_csv(tmp_path / 'b.csv', ['e9', 'h9'])}"]
    done = bashgym_cli("run", *source, *common, "--set", f"router.model={model}", "--out", second)
    assert done.exit_code == 0, done.output
    assert [t.id for t in cheap.tasks] == ["e9"] and [t.id for t in strong.tasks] == ["h9"]
    rows = pd.read_parquet(second / "data.parquet").set_index("trace_id")
    t = fitted["threshold"]
    assert rows.loc["e9", "route_reason"].endswith(f"≥ {t:.2f} (teacher-share=0.5) → student")
    assert rows.loc["h9", "route_reason"].endswith(f"< {t:.2f} (teacher-share=0.5) → teacher")
    assert rows.loc["e9", "route_score"] >= t > rows.loc["h9", "route_score"]
    assert bool(rows.loc["e9", "verified"]) and bool(rows.loc["h9", "verified"])
    routing = json.loads((second / "run.json").read_text())["routing"]
    assert routing["escalations"]["count"] == 0
    assert routing["executors"]["cheap"]["share"] == routing["executors"]["strong"]["share"] == 0.5
