"""DataDesigner's files go to BashGym's cache, never `~/.data-designer`.

DataDesigner reads DATA_DESIGNER_HOME once, when its `config.utils.constants` is imported;
`bashgym_designer.prepare_environment` points it at the cache before that. A plugin module that
imported the constants at its top (the pipeline commands' export did) read it first whenever the
plugins loaded: a user's first command, and every `bashgym validate`, wrote ~/.data-designer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import platformdirs

REPO = Path(__file__).resolve().parents[1]
CONSTANTS = "data_designer.config.utils.constants"


def test_loading_every_plugin_reads_no_datadesigner_home():
    code = (
        "import sys; from bashgym.plugins import PluginHost; host = PluginHost(); "
        "assert not host.failures(), host.failures(); "
        f"print({CONSTANTS!r} in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_a_first_validate_writes_nothing_in_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cache = Path(platformdirs.user_cache_dir()).resolve()  # built already: a warm command
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache)}
    env.pop("DATA_DESIGNER_HOME", None)
    config = REPO / "examples" / "pipelines" / "samplers.yaml"
    bashgym = Path(sys.executable).with_name("bashgym")
    done = subprocess.run(
        [str(bashgym), "validate", str(config)], cwd=home, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert not (home / ".data-designer").exists()
    assert (cache / "bashgym" / "data-designer").is_dir()
