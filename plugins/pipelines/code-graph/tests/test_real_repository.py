"""A real repository's graph against edges written by hand: pallets/click, src layout.

click is installed with BashGym (typer depends on it; uv.lock pins 8.5.1), so its source is on
this machine without a download: it is copied into `src/click/` as its own repository lays it
out. The expected edges below were read off that source by hand; a click upgrade in uv.lock
that moves them is a reason to re-read them, not to loosen the test. Measured before this
test's fixes: bases written with a subscript (`ParamType[bool]`) were dropped, a local
`from .decorators import command` inside `Group.command` resolved to the method itself,
`@overload` stubs took the plain ids, and module ids began with `src.`."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import pytest
from bashgym_pipelines_code_graph.build import build_graph

# (subclass, base) in click/types.py and core.py, each base written as `Name[...]` or plain
INHERITS = {
    ("click.types.CompositeParamType", "click.types.ParamType"),
    ("click.types.FuncParamType", "click.types.ParamType"),
    ("click.types.UnprocessedParamType", "click.types.ParamType"),
    ("click.types.StringParamType", "click.types.ParamType"),
    ("click.types.Choice", "click.types.ParamType"),
    ("click.types.DateTime", "click.types.ParamType"),
    ("click.types.BoolParamType", "click.types.ParamType"),
    ("click.types.UUIDParameterType", "click.types.ParamType"),
    ("click.types.File", "click.types.ParamType"),
    ("click.types.Path", "click.types.ParamType"),
    ("click.types.Tuple", "click.types.CompositeParamType"),
    ("click.types.IntParamType", "click.types._NumberParamTypeBase"),
    ("click.types.IntRange", "click.types._NumberRangeBase"),
    ("click.types.IntRange", "click.types.IntParamType"),
    ("click.types.FloatRange", "click.types.FloatParamType"),
    ("click.core.Group", "click.core.Command"),
    ("click.core.CommandCollection", "click.core.Group"),
    ("click.core.Option", "click.core.Parameter"),
    ("click.core.Argument", "click.core.Parameter"),
}


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    repo = tmp_path_factory.mktemp("click")
    shutil.copytree(Path(click.__file__).parent, repo / "src" / "click",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return build_graph("pallets/click", repo).graph


def test_module_ids_are_the_names_users_import(graph):
    assert "click.core" in graph.nodes and "click.types.ParamType" in graph.nodes
    assert not [n for n in graph.nodes if n.startswith("src.")]


def test_bases_written_with_a_subscript_are_inherits_edges(graph):
    assert set(graph.edges["inherits"]) >= INHERITS


def test_a_local_import_inside_a_method_names_what_it_imports(graph):
    calls = set(graph.edges["calls"])
    # `from .decorators import command` in Group.command, called by its nested `decorator`
    assert ("click.core.Group.command.decorator", "click.decorators.command") in calls
    assert ("click.core.Group.group.decorator", "click.decorators.group") in calls
    assert not [c for c in calls if c[0].startswith("click.core.Group.") and
                c[1] in ("click.core.Group.command", "click.core.Group.group")
                and c[0].endswith(".decorator")]  # fmt: skip


def test_calls_land_on_the_implementation_not_on_overload_stubs(graph):
    impl = graph.nodes["click.core.Group.command"]
    assert "from .decorators import command" in impl.source  # the body, not a stub
    stubs = [n for n in graph.nodes if n.startswith("click.core.Group.command@")]
    assert len(stubs) == 2
    assert "@t.overload" not in graph.nodes["click.decorators.command"].source
    assert "def command(" in graph.nodes["click.decorators.command"].source
    assert graph.nodes["click.decorators.command"].source.count("\n") > 10
