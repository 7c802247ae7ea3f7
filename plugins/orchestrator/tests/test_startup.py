"""Every `bashgym run` loads the orchestrator plugin and registers its source: registering must
not import the job, spec (YAML, pydantic models), plan or events modules, which only a run of
the orchestrator source needs (they cost ~60-150 ms of every run that never orchestrates)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = [
    "bashgym_orchestrator.job",
    "bashgym_orchestrator.spec",
    "bashgym_orchestrator.plan",
    "bashgym_orchestrator.events",
    "yaml",
]

CODE = """
import json, sys
from bashgym_orchestrator import register_sources
got = []
register_sources(lambda name, obj: got.append((name, type(obj).__name__)))
print(json.dumps({"registered": got, "heavy": [m for m in %r if m in sys.modules]}))
"""


def test_registering_the_source_imports_nothing_heavy() -> None:
    done = subprocess.run(
        [sys.executable, "-c", CODE % (HEAVY,)], capture_output=True, text=True, check=True
    )
    seen = json.loads(done.stdout)
    assert seen["registered"] == [["orchestrator", "OrchestratorSource"]]
    assert seen["heavy"] == [], seen["heavy"]
