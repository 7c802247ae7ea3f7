"""A third-party plugin installed with pip into a fresh venv appears and runs; a broken one is
reported by name without stopping anything else. Nothing in BashGym changes for either."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pyarrow.parquet as pq
import pytest

DEMO_PYPROJECT = """
[project]
name = "bashgym-demo-thirdparty"
version = "3.1.4"
dependencies = []
[project.entry-points.bashgym]
demo = "bashgym_demo_thirdparty"
[build-system]
requires = ["setuptools>=70"]
build-backend = "setuptools.build_meta"
[tool.setuptools]
packages = ["bashgym_demo_thirdparty"]
"""

DEMO_MODULE = '''
from pydantic import Field
from bashgym import hookimpl
from bashgym.contracts import Options, Source

class CountOptions(Options):
    count: int = Field(default=3, ge=1)

class Counting(Source[CountOptions]):
    """Rows 0..count-1: a plugin nobody in BashGym has seen."""
    def open(self, options, run):
        return ({"n": i, "square": i * i} for i in range(options.count))

@hookimpl
def register_sources(register):
    register("counting", Counting())
'''

BROKEN_PYPROJECT = (
    DEMO_PYPROJECT.replace("demo-thirdparty", "broken-thirdparty")
    .replace("demo = ", "broken = ")
    .replace("demo_thirdparty", "broken_thirdparty")
)


def write_package(root: Path, pyproject: str, module: str, body: str) -> Path:
    (root / module).mkdir(parents=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(pyproject))
    (root / module / "__init__.py").write_text(body)
    return root


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory) -> Path:
    """A new venv that sees BashGym's environment (through a .pth) and nothing installed in it."""
    root = tmp_path_factory.mktemp("thirdparty")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    target = Path(
        subprocess.check_output(
            [
                env_dir / "bin" / "python",
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            text=True,
        ).strip()
    )
    lines = [f"import site; site.addsitedir({p!r})" for p in site.getsitepackages()]
    (target / "zz_bashgym_parent_env.pth").write_text("\n".join(lines) + "\n")
    demo = write_package(root / "demo", DEMO_PYPROJECT, "bashgym_demo_thirdparty", DEMO_MODULE)
    broken = write_package(
        root / "broken",
        BROKEN_PYPROJECT,
        "bashgym_broken_thirdparty",
        "raise ImportError('this plugin needs libmissing')\n",
    )
    for package in (demo, broken):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(env_dir / "bin" / "python"),
                "install",
                "--quiet",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                str(package),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
    return env_dir


def bashgym_in(env_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BASHGYM_")}
    return subprocess.run(
        [env_dir / "bin" / "python", "-m", "bashgym", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_installed_plugin_is_listed_and_broken_one_reported(plugin_venv, tmp_path):
    result = bashgym_in(plugin_venv, "plugins", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["demo"]["distribution"] == "bashgym-demo-thirdparty"
    assert rows["demo"]["version"] == "3.1.4"
    assert rows["demo"]["registers"] == {"sources": ["counting"]}
    assert rows["demo"]["hooks"] == ["register_sources"]
    assert "this plugin needs libmissing" in rows["broken"]["error"]
    assert rows["sinks-parquet"]["registers"] == {"sinks": ["parquet"]}  # the rest still loads


def test_installed_plugin_is_used_in_a_run_despite_the_broken_one(plugin_venv, tmp_path):
    out = tmp_path / "run"
    result = bashgym_in(
        plugin_venv,
        "run",
        "--source",
        "counting",
        "--set",
        "source.count=5",
        "--sink",
        "parquet",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert "plugin 'broken' is disabled" in result.stderr and "libmissing" in result.stderr
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table["square"]) == [0, 1, 4, 9, 16]
    assert json.loads((out / "run.json").read_text())["plugins"]["source"]["from"] == "demo"


def test_plugin_is_not_visible_outside_its_venv(bashgym_cli):
    result = bashgym_cli("plugins", "--json")
    assert "demo" not in {row["name"] for row in json.loads(result.stdout)}
