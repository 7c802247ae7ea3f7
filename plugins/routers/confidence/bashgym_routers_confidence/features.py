"""What is known about a task before anyone runs it, as numbers a model can weigh.

Every feature is computed from the Task alone (its prompt, metadata and dependencies), so the
router computes exactly the same numbers at route time as `bashgym router fit` does from an
earlier run's stored tasks: no outcome (turns taken, cost, success) can leak into a feature.
The one exception is `probe`, the answer of an optional cheap model call: it exists only when
the router made it, so the router records the features it used in the run's store
(`FEATURES_NAMESPACE`), and `fit` prefers those recorded numbers to recomputed ones.

Metadata read (as an orchestrator's plan writes it: `bashgym_orchestrator`'s PlannedTask has
`estimated_turns` and `files`; a plan nested under `plan` is read too): `estimated_turns` (or
`est_turns`), `files` (paths the task expects to touch). Never `turns`: that is an outcome.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from bashgym.records import Task

FEATURES_NAMESPACE = "router-features"  # the run-store namespace the router records into

# Words that mark work a small model tends to fail (several files, state, time, design) and
# work it tends to pass (one local edit). Matched as whole words, case-insensitive, stems
# allowed (`refactor` matches `refactoring`); each group counts distinct words, not repeats.
HARD_WORDS = (
    "refactor", "debug", "concurren", "race", "deadlock", "thread", "async", "migrat",
    "performance", "optimi", "memory leak", "security", "architect", "distributed", "flaky",
    "intermittent", "protocol", "parser", "compiler", "cache", "transaction", "rewrite",
    "across", "multiple files", "integration", "regression",
)  # fmt: skip
EASY_WORDS = (
    "typo", "rename", "docstring", "comment", "readme", "format", "lint", "print",
    "hello", "one line", "one-line", "constant", "version string", "add a test", "log message",
)  # fmt: skip

BASE_FEATURES = (
    "log_prompt_chars",  # log(1 + characters of the prompt)
    "code_blocks",  # fenced ``` blocks
    "log_code_lines",  # log(1 + lines inside those blocks)
    "inline_code",  # `inline` spans
    "file_refs",  # distinct paths named in the prompt or listed in metadata `files`
    "log_est_turns",  # log(1 + estimated turns) from a plan; 0 when none was given
    "has_est_turns",  # 1 when a plan gave an estimate (so 0 above means "unknown")
    "hard_words",  # distinct HARD_WORDS in the prompt
    "easy_words",  # distinct EASY_WORDS in the prompt
    "depends_on",  # tasks this one waits for
)
PROBE_FEATURE = "probe"  # the probe's self-assessed chance, 0..1 (only with a probe)

_FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)^\s*```", re.S | re.M)
_INLINE = re.compile(r"`[^`\n]+`")
# a path: a word with a slash or a known source/config suffix (`src/app.py`, `Makefile` not)
_PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+|(?<![\w/.-])[\w-]+\."
    r"(?:py|pyi|js|jsx|ts|tsx|go|rs|java|kt|c|cc|cpp|h|hpp|rb|php|cs|swift|sh|toml|ya?ml|json|"
    r"md|txt|cfg|ini|sql|html|css)\b"
)


def _words(groups: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(re.escape(w) for w in groups) + r")", re.I)


_HARD, _EASY = _words(HARD_WORDS), _words(EASY_WORDS)


def task_features(task: Task) -> dict[str, float]:
    """The BASE_FEATURES of `task`, by name (a plain dict: it is JSON in the run store)."""
    prompt = task.prompt
    blocks = _FENCE.findall(prompt)
    outside = _FENCE.sub(" ", prompt)
    meta = _plan_fields(task.metadata)
    paths = {m.group(0).rstrip(".") for m in _PATH.finditer(outside)}
    listed = meta.get("files")
    if isinstance(listed, (list, tuple)):
        paths |= {str(p) for p in listed if str(p).strip()}
    turns = _number(meta.get("estimated_turns", meta.get("est_turns")))
    return {
        "log_prompt_chars": math.log1p(len(prompt)),
        "code_blocks": float(len(blocks)),
        "log_code_lines": math.log1p(sum(b.count("\n") for b in blocks)),
        "inline_code": float(len(_INLINE.findall(outside))),
        "file_refs": float(len(paths)),
        "log_est_turns": math.log1p(turns) if turns is not None else 0.0,
        "has_est_turns": 1.0 if turns is not None else 0.0,
        "hard_words": float(len({m.lower() for m in _HARD.findall(outside)})),
        "easy_words": float(len({m.lower() for m in _EASY.findall(outside)})),
        "depends_on": float(len(task.depends_on)),
    }


def vector(features: Mapping[str, float], names: tuple[str, ...] | list[str]) -> list[float]:
    """`features` in the order `names` lists them (ValueError naming any that is missing)."""
    missing = [n for n in names if n not in features]
    if missing:
        raise ValueError(f"features missing: {', '.join(missing)}")
    return [float(features[n]) for n in names]


def _plan_fields(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level metadata, with a nested `plan` mapping's keys filling in what is absent."""
    plan = metadata.get("plan")
    nested = dict(plan) if isinstance(plan, Mapping) else {}
    return {**nested, **metadata}


def _number(value: Any) -> float | None:
    """A non-negative finite number, or None (absent, text, NaN: an unknown estimate)."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None
