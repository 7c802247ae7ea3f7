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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bashgym.records import DroppedRow
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


# What a question asks, in words a rewording must keep: each class present in the template
# must be present in the rewording (any synonym), and none may appear that the template lacks.
MEANING = {
    "grouping": ("for each", "each", "every", "per"),
    "average": ("average", "mean"),
    "median": ("median",),
    "total": ("total", "sum"),
    "largest": ("largest", "maximum", "highest", "biggest", "greatest"),
    "smallest": ("smallest", "minimum", "lowest", "least"),
    "distinct": ("distinct", "unique", "different"),
    "missing": ("no value", "missing", "null", "empty", "blank"),
    "greater": ("greater than", "more than", "above", "exceeds", "larger than", "higher than"),
    "deviation": ("standard deviation",),
    "correlation": ("correlation",),
    "p-value": ("p-value", "p value", "pvalue"),
}
_LITERAL = re.compile(r"'[^']*'|(?<![\w.])-?\d+(?:\.\d+)?(?!\w|\.\d)")


def _classes(text: str) -> set[str]:
    low = f" {' '.join(text.casefold().replace('?', ' ').split())} "
    return {k for k, words in MEANING.items() if any(f" {w} " in low for w in words)}


def meaning_changed(template: str, reworded: str, columns: Sequence[str] = ()) -> str | None:
    """Why a rewording asks something else than its template, or None when it keeps it: the
    same kind of question (MEANING), every column and literal the template names. A changed
    meaning would be checked against the template's code and kept with the wrong question
    ("total revenue" reworded as "total revenue for each customer" was)."""
    want, got = _classes(template), _classes(reworded)
    if want != got:
        parts = [f"+{c}" for c in sorted(got - want)] + [f"-{c}" for c in sorted(want - got)]
        return "asks " + ", ".join(parts)
    norm = " ".join(reworded.casefold().replace("_", " ").split())
    for column in columns:
        if column.casefold() in template.casefold() and (
            " ".join(column.casefold().replace("_", " ").split()) not in norm
        ):
            return f"leaves out column {column}"
    for literal in _LITERAL.findall(template):
        word = re.escape(literal.strip("'"))
        if not re.search(rf"(?<![\w.]){word}(?!\w|\.\d)", reworded, re.IGNORECASE):
            return f"leaves out {literal}"
    return None


def _proposal(value: Any) -> dict[str, Any]:
    value = plain(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


@dataclass
class Read:
    """The questions of the generated rows by key, the row each was read from (by key), and
    the rows dropped, each whole with its reason (for dropped.jsonl)."""

    questions: dict[str, dict[str, Any]] = field(default_factory=dict)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: list[DroppedRow] = field(default_factory=list)

    def drop(self, run: RunContext, reason: str, row: dict[str, Any]) -> None:
        run.drop(f"{NAME}: {reason}")
        self.dropped.append(DroppedRow(f"pipeline {NAME}", reason, plain(row)))


def read_questions(
    dataset: Any,
    options: CsvTriangulationOptions,
    run: RunContext,
    csv_sha256: str,
    columns: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """The questions of the generated rows, by key (see `read_generated`)."""
    return read_generated(dataset, options, run, csv_sha256, columns).questions


def read_generated(
    dataset: Any,
    options: CsvTriangulationOptions,
    run: RunContext,
    csv_sha256: str,
    columns: Sequence[str] = (),
) -> Read:
    """The questions of the generated rows, by key; unusable and repeated ones are dropped
    with their reason. A rewording that changed the question's meaning (`columns`: the CSV's,
    which it must keep naming) is asked in the template's words instead, and counted."""
    read = Read()
    found = read.questions
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
            elif question != template and (why := meaning_changed(template, question, columns)):
                run.count(f"{NAME}.reworded_meaning_changed")
                run.note(f"{NAME}: rewording {question!r} {why}; asked as {template!r}")
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
            read.drop(run, "no question", row)
            continue
        if not q["hint"]:
            read.drop(run, "no hint for the gold run", row)
            continue
        key = question_key(q, csv_sha256)
        if key in found:
            read.drop(run, "duplicate question", row)
            continue
        found[key], read.rows[key] = q, plain(row)
    return read
