"""The tests here share `secrets_corpus` (the planted secrets and their look-alikes); under
pytest's importlib import mode a test's folder is not on `sys.path`, so it is put there."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)
