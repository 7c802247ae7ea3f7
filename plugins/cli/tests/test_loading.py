"""`--plugin SPEC`: a .py file, a module or a distribution, loaded for one command; clear errors."""

from __future__ import annotations

import textwrap

import pytest
from bashgym_cli import load_plugin

from bashgym.plugins import PluginHost, PluginLoadError


def test_load_local_py_file_module_and_distribution(tmp_path, monkeypatch):
    path = tmp_path / "my_plugin.py"
    path.write_text(
        textwrap.dedent("""
        from bashgym import hookimpl
        from bashgym.contracts import Source

        class Tiny(Source):
            def open(self, options, run):
                return [{"v": 1}]

        @hookimpl
        def register_sources(register):
            register("tiny", Tiny())
    """)
    )
    host = PluginHost(entry_points=False)
    assert load_plugin(host, str(path)) == ["my_plugin"]
    assert host.registry.get("sources", "tiny").plugin == "my_plugin"

    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "modplug.py").write_text(path.read_text().replace('"tiny"', '"tiny2"'))
    load_plugin(host, "modplug")
    assert host.registry.get("sources", "tiny2").plugin == "modplug"

    monkeypatch.setenv("BASHGYM_LOAD_PLUGINS", "")
    narrowed = PluginHost()
    assert load_plugin(narrowed, "bashgym-sinks-parquet") == ["sinks-parquet"]
    assert narrowed.registry.names("sinks") == ["parquet"]


def test_load_errors_are_clear(tmp_path):
    host = PluginHost(entry_points=False)
    with pytest.raises(PluginLoadError, match="does not exist"):
        load_plugin(host, str(tmp_path / "missing.py"))
    bad = tmp_path / "bad.py"
    bad.write_text("raise ImportError('needs libfoo')\n")
    with pytest.raises(PluginLoadError, match="needs libfoo"):
        load_plugin(host, str(bad))
    with pytest.raises(PluginLoadError, match=r"not a \.py file, an installed distribution"):
        load_plugin(host, "no_such_module_anywhere")


def test_a_misspelled_hook_is_an_error_naming_the_plugin(tmp_path):
    plugin = tmp_path / "typo_plugin.py"
    plugin.write_text(
        "from bashgym import hookimpl\n\n@hookimpl\ndef register_sorces(register):\n    pass\n"
    )
    host = PluginHost(entry_points=False)
    with pytest.raises(PluginLoadError, match=r"typo_plugin.*register_sorces"):
        load_plugin(host, str(plugin))
    assert "typo_plugin" not in host.infos
