"""The `confidence` router's decisions: who runs each task, and the reason it gives."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bashgym_routers_confidence.features import FEATURES_NAMESPACE, task_features
from bashgym_routers_confidence.fitted import fit
from bashgym_routers_confidence.outcomes import Outcome
from bashgym_routers_confidence.router import ConfidenceOptions, ConfidenceRouter
from bashgym_routers_confidence.simulate import simulate
from bashgym_routers_confidence.thresholds import Target
from bashgym_testing import Fault, Reply
from confidence_runs import both_ran

from bashgym.contracts import InputError, RunContext
from bashgym.records import Task
from bashgym.settings import Settings

EASY = Task(id="easy", prompt="Fix the typo in the docstring of greet().")
HARD = Task(
    id="hard",
    prompt="Refactor the connection pool for concurrency, debug the deadlock and the race in "
    + " ".join(f"src/pool/mod{i}.py" for i in range(6))
    + ", then migrate the cache and the protocol parser. "
    + "Keep every caller working across the distributed services. " * 20,
    metadata={"estimated_turns": 40},
)


def outcomes(n: int = 200, *, probe: bool = False) -> list[Outcome]:
    out = []
    for a in both_ran(simulate(n, seed=21)):
        f = task_features(a.task)
        if probe:  # a probe that knows a little: higher for the tasks the student passes
            f["probe"] = 0.7 if a.passed else 0.4
        out.append(Outcome(a.task.id, a.executor, f, bool(a.passed), a.cost_usd, a.turns, "r"))
    return out


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    router = fit(outcomes(), Target.parse("teacher-share=0.3"))
    return router.save(tmp_path_factory.mktemp("router") / "router.json")


def context(tmp_path: Path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


def test_easy_to_the_student_with_escalation_hard_to_the_teacher(model_file, tmp_path) -> None:
    router, run = ConfidenceRouter(), context(tmp_path)
    options = ConfidenceOptions(model=model_file)
    easy, hard = router.route(EASY, options, run), router.route(HARD, options, run)
    threshold = router.fitted(options).threshold
    assert (easy.executor, easy.escalate_to) == ("student", "claude-cli")
    assert (hard.executor, hard.escalate_to) == ("claude-cli", None)
    assert easy.score is not None and hard.score is not None
    assert easy.score >= threshold > hard.score
    # the reason states the score against the threshold, and where the threshold came from
    assert easy.reason == (
        f"p(student passes)={easy.score:.2f} ≥ {threshold:.2f} (teacher-share=0.3) → student"
    )
    assert re.fullmatch(
        r"p\(student passes\)=0\.\d\d < 0\.\d\d \(teacher-share=0\.3\) → teacher", hard.reason
    )
    # what the router saw is in the run's store, for the next fit
    seen = {i.key: i.result for i in run.store.items(FEATURES_NAMESPACE, "done")}
    assert seen == {"easy": task_features(EASY), "hard": task_features(HARD)}


def test_options_threshold_names_and_escalation(model_file, tmp_path) -> None:
    router, run = ConfidenceRouter(), context(tmp_path)
    always = ConfidenceOptions(model=model_file, threshold=0.0, student="mini", teacher="big")
    route = router.route(HARD, always, run)
    assert (route.executor, route.escalate_to) == ("mini", "big")
    assert "≥ 0.00 (threshold set by hand) → student" in route.reason
    route = router.route(EASY, ConfidenceOptions(model=model_file, escalate=False), run)
    assert (route.executor, route.escalate_to) == ("student", None)
    never = ConfidenceOptions(model=model_file, threshold=1.0)
    assert router.route(EASY, never, run).executor == "claude-cli"
    assert router.executors(always) == ["mini", "big"]  # what resolve() checks is installed
    assert router.inputs(always) == [model_file]  # a changed file never resumes silently


def test_without_a_file_the_prior_decides(tmp_path) -> None:
    router, run = ConfidenceRouter(), context(tmp_path)
    options = ConfidenceOptions()
    easy, hard = router.route(EASY, options, run), router.route(HARD, options, run)
    assert easy.executor == "student" and hard.executor == "claude-cli"
    assert "(prior)" in easy.reason and "< 0.50" in hard.reason


def test_a_missing_or_probe_fitted_file_is_a_clear_error(tmp_path) -> None:
    router, run = ConfidenceRouter(), context(tmp_path)
    with pytest.raises(InputError, match="does not exist"):
        router.route(EASY, ConfidenceOptions(model=tmp_path / "nope.json"), run)
    probed = fit(outcomes(probe=True), Target.parse("teacher-share=0.3"))
    assert probed.features[-1] == "probe"
    path = probed.save(tmp_path / "probed.json")
    with pytest.raises(InputError, match=r"set router\.probe=ALIAS"):
        router.route(EASY, ConfidenceOptions(model=path), run)


@pytest.mark.slow  # litellm's first import: ~5 s idle, up to ~50 s on a busy 2-core machine
def test_the_probe_asks_once_and_its_answer_is_a_feature(scripted_models, tmp_path) -> None:
    probed = fit(outcomes(probe=True), Target.parse("teacher-share=0.3"))
    path = probed.save(tmp_path / "probed.json")
    router, run = ConfidenceRouter(), scripted_models.run_context(tmp_path / "run")
    server = scripted_models.server
    options = ConfidenceOptions(model=path, probe="default")
    try:
        server.script(Reply(text="85"), Reply(text="5%"))
        high, low = router.route(EASY, options, run), router.route(EASY, options, run)
        assert len(server.requests) == 2
        assert "Estimate the chance" in str(server.requests[0].body["messages"])
        assert high.score is not None and low.score is not None and high.score > low.score
        seen = run.store.get(FEATURES_NAMESPACE, "easy")
        assert seen is not None and seen.result["probe"] == 0.85  # the first route's, kept
        # a probe that fails sends the task to the teacher, and says why
        server.script(Fault.status(400), Reply(text="no idea"))
        failed = router.route(HARD, options, run)
        assert failed.executor == "claude-cli" and "probe 'default' failed" in failed.reason
        vague = router.route(EASY, options, run)
        assert vague.executor == "claude-cli" and "not a number" in vague.reason
    finally:
        run.models.close()


def test_registering_the_router_does_not_import_scikit_learn():
    """Every command that loads every plugin (`bashgym options`, a run's mistake that lists
    every choice: `--set source.nope=1` took 3.3 s, 1.7 s of it SciPy and scikit-learn)
    registers this router; only a run that routes, or `router fit`, needs scikit-learn."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from bashgym_routers_confidence import register_routers\n"
        "found = []\n"
        "register_routers(lambda name, router: found.append(name))\n"
        "assert found == ['confidence'], found\n"
        "print(sorted(m for m in ('sklearn', 'scipy') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
