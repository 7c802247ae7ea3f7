"""Shared helpers: the shipped CSV, the environments installed here, and a pool to run cells in."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from bashgym_pipelines_csv_triangulation.options import SandboxOptions
from bashgym_pipelines_csv_triangulation.sandbox import choose, make_pool

from bashgym.plugins import PluginHost

DATA = Path(__file__).parent / "data"
SHOP = DATA / "shop.csv"
TIGHT = {"cpu_s": 1, "wall_s": 4, "memory_mb": 256, "file_size_mb": 2, "output_limit": 2000}


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
def shop() -> Path:
    """The shipped CSV: 24 orders (order_id, region, product, units, price, revenue)."""
    return SHOP


@pytest.fixture
def sandbox(registry: Any, environment: str, tmp_path: Path) -> Callable[..., Any]:
    """`sandbox(body, csv=..., **limits)`: run `body(pool)` in a one-worker pool of
    `environment`, with tight limits unless overridden."""

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
    options = SandboxOptions(
        environment=environment,
        workers=1,
        preload=["pandas", "numpy"],
        **{**TIGHT, **limits},
    )

    async def go() -> Any:
        async with make_pool(choose(registry, options), options, root, csv) as pool:
            return await body(pool)

    return asyncio.run(go())
