"""detect-secrets' detectors are read from the user's cache after the first run: the same rules,
and no import of detect-secrets (with requests, ~0.1 s of every run's start-up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from bashgym_scrubbers_secrets.rules import _detect_secrets_rules
rules = [(r.type, [(p.pattern, p.flags) for p in r.patterns], repr(r.gates)) for r in
         _detect_secrets_rules()]
print(json.dumps({"rules": rules, "imported": "detect_secrets" in sys.modules}))
"""


def _probe(cache: Path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True,
                         check=True)  # fmt: skip
    return json.loads(out.stdout)


def test_the_second_start_reads_the_detectors_from_the_cache(tmp_path):
    first, second = _probe(tmp_path), _probe(tmp_path)
    assert first["imported"] and not second["imported"]
    assert first["rules"] == second["rules"] and len(first["rules"]) > 10
    (cache,) = (tmp_path / "bashgym" / "detect-secrets").iterdir()
    cache.write_text("{not json")  # a broken cache file costs the import, nothing else
    third = _probe(tmp_path)
    assert third["imported"] and third["rules"] == first["rules"]
