"""Shared helpers: the shipped CSV, the environments installed here, and a pool to run cells in."""

from __future__ import annotations

import asyncio
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from bashgym_pipelines_csv_triangulation.options import SandboxOptions
from bashgym_pipelines_csv_triangulation.sandbox import choose, make_pool
from bashgym_testing.server import Reply

from bashgym.plugins import PluginHost

DATA = Path(__file__).parent / "data"
SHOP = DATA / "shop.csv"
TIGHT = {"cpu_s": 1, "wall_s": 20, "memory_mb": 256, "file_size_mb": 2, "output_limit": 2000}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes over 10 s (deselect with -m 'not slow')")


@pytest.fixture(scope="session")
def registry() -> Any:
    return PluginHost().registry


@pytest.fixture(params=["bubblewrap", "local"])
def environment(request: pytest.FixtureRequest, registry: Any) -> str:
    """Each environment plugin that is installed and can run here (skipped, named, if not)."""
    name = request.param
    if name not in registry.items["environments"]:
        pytest.skip(f"environment {name} is not installed (bashgym-environments-{name})")
    why = registry.get("environments", name).obj.available()
    if why is not None:
        pytest.skip(f"environment {name} cannot run here: {why}")
    return name


@pytest.fixture
def best_environment(registry: Any) -> str:
    """The strongest environment that can run here: bubblewrap, else local (for checks that
    need one sandbox, not each); skipped, named, when neither can."""
    reasons = []
    for name in ("bubblewrap", "local"):
        if name not in registry.items["environments"]:
            reasons.append(f"{name} is not installed")
            continue
        why = registry.get("environments", name).obj.available()
        if why is None:
            return name
        reasons.append(f"{name}: {why}")
    pytest.skip(f"no environment can run here ({'; '.join(reasons)})")


@pytest.fixture
def best_sandbox(registry: Any, best_environment: str, tmp_path: Path) -> Callable[..., Any]:
    """`sandbox`, in `best_environment` only."""
    return sandbox_in(registry, best_environment, tmp_path)


@pytest.fixture
def shop() -> Path:
    """The shipped CSV: 24 orders (order_id, region, product, units, price, revenue)."""
    return SHOP


@pytest.fixture
def sandbox(registry: Any, environment: str, tmp_path: Path) -> Callable[..., Any]:
    """`sandbox(body, csv=..., **limits)`: run `body(pool)` in a one-worker pool of
    `environment`, with tight limits unless overridden."""
    return sandbox_in(registry, environment, tmp_path)


def sandbox_in(registry: Any, environment: str, tmp_path: Path) -> Callable[..., Any]:
    def run(body: Callable[[Any], Coroutine[Any, Any, Any]], **kwargs: Any) -> Any:
        root = kwargs.pop("root", tmp_path / "pool")
        return run_in_pool(registry, environment, root, body, **kwargs)

    return run


def run_in_pool(
    registry: Any,
    environment: str,
    root: Path,
    body: Callable[[Any], Coroutine[Any, Any, Any]],
    *,
    csv: Path | None = SHOP,
    **limits: Any,
) -> Any:
    """Start a one-worker pool in `environment` and run `body(pool)` in it."""
    fields = {"environment": environment, "workers": 1, "preload": ["pandas", "numpy"]}
    options = SandboxOptions(**{**fields, **TIGHT, **limits})

    async def go() -> Any:
        async with make_pool(choose(registry, options), options, root, csv) as pool:
            return await body(pool)

    return asyncio.run(go())


SYSTEM_MARK = "data analyst who answers questions about a CSV file"


def question_of(request) -> str:
    first_user = next(m for m in request.messages if m.get("role") == "user")
    text = first_user["content"]
    if isinstance(text, list):
        text = "".join(part.get("text", "") for part in text)
    return re.search(r"Question: (.*)", text).group(1).strip()


class ScriptedTeacher:
    """Plays each question's plan: one behaviour per episode, in the order episodes start.

    correct: looks at the data, then submits the gold code's answer (two turns); wrong: submits
    -1; prose: answers in words, no code, however often it is told the format; late: answers in
    words first, then, told the format, submits the gold code's answer; print: prints the
    answer, then says in words that it did, never submitting; series: submits the gold answer
    as a pandas object, not a dict.
    """

    def __init__(self, gold_code: dict[str, str], plans: dict[str, list[str]]):
        self.gold_code, self.plans = gold_code, plans
        self.started: dict[str, int] = defaultdict(int)
        self.lock = threading.Lock()

    def __call__(self, request) -> Reply:
        question = question_of(request)
        done = [m["content"] for m in request.messages if m.get("role") == "assistant"]
        if not done:
            with self.lock:
                n = self.started[question]
                self.started[question] += 1
            plan = self.plans[question][n % len(self.plans[question])]
            if "Hint:" in request.messages[1]["content"]:
                plan = "correct"  # the gold run of an llm question
            return self.first(plan, question)
        marked = re.search(r"# plan: (\w+)", done[0])
        plan = marked.group(1) if marked else "prose"
        if plan == "prose" or (plan == "print" and len(done) > 1):
            return Reply("The answer is printed above.")
        return self.second(plan, question)

    def first(self, plan: str, question: str) -> Reply:
        if plan == "prose":
            return Reply(f"The answer is 42. {question}")
        if plan == "late":
            return Reply("The answer is 42. # plan: late")
        if plan == "wrong":
            return Reply("```python\n# plan: wrong\nsubmit(-1)\n```")
        return Reply(f"Let me look.\n```python\n# plan: {plan}\nprint(df.head(3))\n```")

    def second(self, plan: str, question: str) -> Reply:
        code = self.gold_code[question]
        if plan == "print":
            return Reply("```python\n" + code.replace("submit(", "print(") + "\n```")
        if plan == "series":
            code = code.replace(".to_dict())", ")")
        return Reply(f"```python\n{code}\n```")


@pytest.fixture
def scripted_teacher(scripted_models: Any) -> Callable[..., ScriptedTeacher]:
    """`scripted_teacher(gold_code, plans)`: the scripted server answers every episode turn
    (requests with the teacher's system prompt) by the plans; returns the teacher."""

    def install(gold_code: dict[str, str], plans: dict[str, list[str]]) -> ScriptedTeacher:
        teacher = ScriptedTeacher(gold_code, plans)
        scripted_models.server.add_rule(lambda r: SYSTEM_MARK in r.system_text, teacher)
        return teacher

    return install
