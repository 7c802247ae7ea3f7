"""Questions in and out of DataDesigner: the seed rows `build()` attaches, and the questions
`finalize()` reads back from the generated rows.

llm: one seed row per question to propose, each naming a kind and a focus column (kinds and
columns taken in turn, shuffled by the run's seed), so the proposals spread over the file
instead of all asking about its first column; the profile rides along as a seed column, so
text from the CSV is never read as Jinja. templates: one seed row per template question.
"""

from __future__ import annotations

import json
import random
import re
from typing import TYPE_CHECKING, Any

from bashgym.text import plain
from bashgym_pipelines_csv_triangulation.episodes import question_key
from bashgym_pipelines_csv_triangulation.prompts import KIND_GUIDE
from bashgym_pipelines_csv_triangulation.templates import template_questions

if TYPE_CHECKING:
    from bashgym.contracts import RunContext
    from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
    from bashgym_pipelines_csv_triangulation.profile import Profile

NAME = "csv-triangulation"
PROPOSAL = "proposal"
LABEL = re.compile(r"^\s*(?:reworded\s+)?question\s*:\s*", re.IGNORECASE)


def llm_seed_rows(profile: Profile, kinds: list[str], n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    kinds = list(kinds)
    rng.shuffle(kinds)
    focus = [c.name for c in profile.columns if c.kind != "id"] or [profile.columns[0].name]
    rng.shuffle(focus)
    text = profile.text()
    return [
        {
            "kind": kinds[i % len(kinds)],
            "kind_guide": KIND_GUIDE[kinds[i % len(kinds)]],
            "focus": focus[i % len(focus)],
            "profile": text,
            "csv_name": profile.name,
        }
        for i in range(n)
    ]


def template_seed_rows(
    profile: Profile, kinds: list[str], n: int, seed: int
) -> list[dict[str, Any]]:
    rows = [q.as_row() for q in template_questions(profile, kinds, seed=seed, limit=n)]
    for row in rows:
        row["csv_name"] = profile.name
    return rows


def _text(value: Any) -> str:
    value = plain(value)
    return value.strip() if isinstance(value, str) else ""


def _reworded(value: Any) -> str:
    """A model's rewording, without the quotes and labels small models add."""
    text = LABEL.sub("", _text(value)).strip().strip('"').strip("'").strip()
    return text.splitlines()[0].strip() if text else ""


def _proposal(value: Any) -> dict[str, Any]:
    value = plain(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def read_questions(
    dataset: Any, options: CsvTriangulationOptions, run: RunContext, csv_sha256: str
) -> dict[str, dict[str, Any]]:
    """The questions of the generated rows, by key; unusable and repeated ones are dropped
    with their reason."""
    found: dict[str, dict[str, Any]] = {}
    for row in dataset.to_dict(orient="records"):
        if options.questions == "llm":
            proposal = _proposal(row.get(PROPOSAL))
            q = {
                "kind": _text(row.get("kind")),
                "question": _text(proposal.get("question")),
                "answer_format": _text(proposal.get("answer_format")) or "a value",
                "hint": _text(proposal.get("hint")),
                "answer_type": _text(proposal.get("answer_type")) or "number",
                "code": None,
                "source": "llm",
            }
        else:
            template = _text(row.get("template_question"))
            question = _reworded(row.get("question")) if options.verbalize else template
            if not question:
                run.count(f"{NAME}.reworded_empty")  # asked in the template's words instead
                question = template
            q = {
                "kind": _text(row.get("kind")),
                "question": question,
                "template_question": template,
                "answer_format": _text(row.get("answer_format")),
                "hint": _text(row.get("hint")),
                "answer_type": _text(row.get("answer_type")) or "number",
                "code": _text(row.get("code")),
                "source": "template",
            }
        if not q["question"]:
            run.drop(f"{NAME}: no question")
            continue
        if not q["hint"]:
            run.drop(f"{NAME}: no hint for the gold run")
            continue
        key = question_key(q, csv_sha256)
        if key in found:
            run.drop(f"{NAME}: duplicate question")
            continue
        found[key] = q
    return found
