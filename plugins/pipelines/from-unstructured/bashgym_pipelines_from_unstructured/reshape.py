"""Judged Q&A rows → `prompt` / `response` rows (what nemo-jsonl's `rows` input reads).

The prompt is the question (or, in the with-context style, the chunk and then the question);
the response is the answer. Where the answer came from stays with it: the source path, chunk
id and lines, the chunk text itself as `context`, the sampled question kind and difficulty,
and the judge's scores.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bashgym.contracts import Generated
from bashgym.records import DroppedRow
from bashgym.text import plain

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.contracts import RunContext
    from bashgym_pipelines_from_unstructured.options import FromUnstructuredOptions

NAME = "from-unstructured"
USABLE, JUDGE = "chunk_usable", "judge"
GENERATED = ("question_type", "difficulty", USABLE, "chunk_id", "question", "answer", JUDGE)
METADATA = {  # output column <- seed column, when the seed has it
    "source_path": "path",
    "chunk_index": "chunk_index",
    "start_line": "start_line",
    "end_line": "end_line",
    "page": "page",
}


def with_context(context: str, question: str, path: Any) -> str:
    source = f' source="{path}"' if isinstance(path, str) and path else ""
    return f"<document{source}>\n{context.strip()}\n</document>\n\n{question}"


def to_rows(dataset: pd.DataFrame, options: FromUnstructuredOptions, run: RunContext) -> Generated:
    """The output rows, and each row dropped (no question or answer) handed back whole."""
    import pandas as pd  # ~0.5 s (measured): only when rows are made, not at every start-up

    meta = {out: col for out, col in METADATA.items() if col in dataset.columns}
    columns = ["prompt", "response", "chunk_id", *meta, "question_type", "difficulty"]
    columns += [JUDGE, "context"]
    rows, dropped = [], []
    for row in dataset.to_dict(orient="records"):
        question, answer = plain(row.get("question")), plain(row.get("answer"))
        context = plain(row.get(options.text_column))
        missing = (
            "no question" if not (isinstance(question, str) and question.strip())
            else "no answer" if not (isinstance(answer, str) and answer.strip())
            else None
        )  # fmt: skip
        if missing is not None:
            run.drop(f"{NAME}: {missing}")
            dropped.append(DroppedRow(f"pipeline {NAME}", missing, plain(row)))
            continue
        question = str(question).strip()
        prompt = (
            with_context(str(context or ""), question, row.get("path"))
            if options.prompt_style == "with-context"
            else question
        )
        rows.append(
            {
                "prompt": prompt,
                "response": str(answer).strip(),
                "chunk_id": row.get("chunk_id"),
                **{out: row.get(col) for out, col in meta.items()},
                "question_type": row.get("question_type"),
                "difficulty": row.get("difficulty"),
                JUDGE: row.get(JUDGE),
                "context": context,
            }
        )
    return Generated(pd.DataFrame(rows, columns=columns), dropped)
