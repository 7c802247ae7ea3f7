"""Template questions: profiling -> aggregation, filtering, group-by, statistics -> code -> text.

No model writes this code. The profile says which columns are numeric and which categorical
(and their frequent values); each template turns a choice of columns into the pandas code that
computes the answer, the question in words, the answer format and a hint. The code is the gold
run: it executes in the sandbox like any teacher's cell, and the model's hint-free runs must
agree with it. Choices are shuffled with the run's seed, so a run is reproducible, and kinds
are interleaved so a short run still covers each of them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from bashgym_pipelines_csv_triangulation.profile import Profile

ROUND = 2
# A statistic with nothing to measure (a constant group, a column of one value) is not a
# question: the gold code stops with this, so no consistency run is spent on it and the row is
# dropped with the reason in its verdict (a t-test on a constant group answered p = 0 before).
DEGENERATE = "degenerate statistic"


@dataclass
class Question:
    """One question to triangulate; `code` is set for template questions (the gold run)."""

    kind: str
    question: str
    answer_format: str
    hint: str
    answer_type: str = "number"  # number, p_value, text, list, dict, table, boolean
    code: str | None = None
    source: str = "template"

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["template_question"] = row.pop("question")
        return row


def _value(value: Any) -> str:
    """How the value reads in a question."""
    return f"'{value}'" if isinstance(value, str) else f"{value}"


def _aggregations(p: Profile) -> Iterator[Question]:
    stats = [("mean", "average"), ("median", "median"), ("sum", "total"), ("max", "largest"),
             ("min", "smallest")]  # fmt: skip
    for col in p.of_kind("numeric"):
        for fn, word in stats:
            yield Question(
                "aggregation",
                f"What is the {word} value of {col.name}?",
                f"a number rounded to {ROUND} decimals",
                f"Compute df[{col.name!r}].{fn}() (missing values are skipped) and round it.",
                code=f"submit(round(float(df[{col.name!r}].{fn}()), {ROUND}))",
            )
    for col in p.of_kind("categorical", "text", "id"):
        yield Question(
            "aggregation",
            f"How many distinct values does {col.name} take?",
            "an integer",
            f"Count the distinct non-missing values with df[{col.name!r}].nunique().",
            code=f"submit(int(df[{col.name!r}].nunique()))",
        )
    for col in p.columns:
        if col.non_null < p.rows:
            yield Question(
                "aggregation",
                f"How many rows have no value for {col.name}?",
                "an integer",
                f"Count the missing values with df[{col.name!r}].isna().sum().",
                code=f"submit(int(df[{col.name!r}].isna().sum()))",
            )


def _filters(p: Profile) -> Iterator[Question]:
    for col in p.of_kind("numeric"):
        if "median" in col.stats:
            limit = round(col.stats["median"], ROUND)
            yield Question(
                "filtering",
                f"How many rows have {col.name} greater than {limit:g}?",
                "an integer",
                f"Filter rows where df[{col.name!r}] > {limit:g} and count them.",
                code=f"submit(int((df[{col.name!r}] > {limit!r}).sum()))",
            )
    for cat in p.of_kind("categorical"):
        for value, _ in cat.top[:2]:
            yield Question(
                "filtering",
                f"How many rows have {cat.name} equal to {_value(value)}?",
                "an integer",
                f"Filter rows where df[{cat.name!r}] == {value!r} and count them.",
                code=f"submit(int((df[{cat.name!r}] == {value!r}).sum()))",
            )
            for num in p.of_kind("numeric")[:2]:
                yield Question(
                    "filtering",
                    f"What is the average {num.name} among rows where {cat.name} is "
                    f"{_value(value)}?",
                    f"a number rounded to {ROUND} decimals",
                    f"Filter rows where df[{cat.name!r}] == {value!r}, then take the mean of "
                    f"{num.name!r} and round it.",
                    code=(
                        f"subset = df[df[{cat.name!r}] == {value!r}]\n"
                        f"submit(round(float(subset[{num.name!r}].mean()), {ROUND}))"
                    ),
                )


def _group_bys(p: Profile) -> Iterator[Question]:
    for cat in p.of_kind("categorical"):
        yield Question(
            "group-by",
            f"How many rows are there for each value of {cat.name}?",
            f"a dict mapping each {cat.name} value to its row count",
            f"Use df[{cat.name!r}].value_counts() and turn it into a dict.",
            answer_type="dict",
            code=f"submit(df[{cat.name!r}].value_counts().to_dict())",
        )
        for num in p.of_kind("numeric"):
            yield Question(
                "group-by",
                f"What is the average {num.name} for each {cat.name}?",
                f"a dict mapping each {cat.name} value to the average {num.name}, rounded to "
                f"{ROUND} decimals",
                f"Group by {cat.name!r}, take the mean of {num.name!r}, round, and make a dict.",
                answer_type="dict",
                code=f"submit(df.groupby({cat.name!r})[{num.name!r}].mean().round({ROUND})"
                ".to_dict())",
            )
            yield Question(
                "group-by",
                f"Which {cat.name} has the highest total {num.name}?",
                f"the {cat.name} value",
                f"Group by {cat.name!r}, sum {num.name!r}, and take the group with the largest "
                "sum (idxmax).",
                answer_type="text",
                code=f"submit(df.groupby({cat.name!r})[{num.name!r}].sum().idxmax())",
            )


def _statistics(p: Profile) -> Iterator[Question]:
    numeric = p.of_kind("numeric")
    for i, a in enumerate(numeric):
        yield Question(
            "statistics",
            f"What is the sample standard deviation of {a.name}?",
            f"a number rounded to {ROUND} decimals",
            f"Use df[{a.name!r}].std() (pandas' default, ddof=1) and round it.",
            code=(
                f"col = df[{a.name!r}].dropna()\n"
                f"if len(col) < 2:\n    raise ValueError('{DEGENERATE}: fewer than 2 values')\n"
                f"submit(round(float(col.std()), {ROUND}))"
            ),
        )
        for b in numeric[i + 1 :]:
            yield Question(
                "statistics",
                f"What is the Pearson correlation between {a.name} and {b.name}?",
                "a number rounded to 3 decimals",
                f"Use df[{a.name!r}].corr(df[{b.name!r}]) (Pearson, pairwise complete rows).",
                code=(
                    f"pair = df[[{a.name!r}, {b.name!r}]].dropna()\n"
                    "if len(pair) < 3 or (pair.std() == 0).any():\n"
                    f"    raise ValueError('{DEGENERATE}: a constant column or under 3 rows')\n"
                    f"submit(round(float(df[{a.name!r}].corr(df[{b.name!r}])), 3))"
                ),
            )
    for cat in p.of_kind("categorical"):
        if len(cat.top) < 2:
            continue
        (first, _), (second, _) = cat.top[:2]
        for num in numeric[:2]:
            yield Question(
                "statistics",
                f"Does the mean {num.name} differ between rows where {cat.name} is "
                f"{_value(first)} and rows where it is {_value(second)}? Give the "
                "p-value of Welch's two-sample t-test.",
                "the p-value, a number between 0 and 1",
                f"Take {num.name!r} (missing values dropped) for each of the two groups and run "
                "scipy.stats.ttest_ind with equal_var=False; submit its pvalue.",
                answer_type="p_value",
                code=(
                    "from scipy import stats\n"
                    f"a = df.loc[df[{cat.name!r}] == {first!r}, {num.name!r}].dropna()\n"
                    f"b = df.loc[df[{cat.name!r}] == {second!r}, {num.name!r}].dropna()\n"
                    "if min(len(a), len(b)) < 2 or a.std() == 0 or b.std() == 0:\n"
                    f"    raise ValueError('{DEGENERATE}: a group is constant or too small')\n"
                    "submit(float(stats.ttest_ind(a, b, equal_var=False).pvalue))"
                ),
            )


GENERATORS = {
    "aggregation": _aggregations,
    "filtering": _filters,
    "group-by": _group_bys,
    "statistics": _statistics,
}


def template_questions(
    profile: Profile, kinds: list[str], *, seed: int, limit: int
) -> list[Question]:
    """Up to `limit` questions, kinds interleaved, each kind's candidates shuffled by `seed`."""
    rng = random.Random(seed)
    pools = []
    for kind in kinds:
        candidates = list(GENERATORS[kind](profile))
        rng.shuffle(candidates)
        pools.append(candidates)
    out: list[Question] = []
    while len(out) < limit and any(pools):
        for pool in pools:
            if pool and len(out) < limit:
                out.append(pool.pop())
    return out
