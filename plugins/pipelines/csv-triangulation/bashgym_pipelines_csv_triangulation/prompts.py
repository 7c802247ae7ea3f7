"""The words: proposing a question, rewording a template, and the teacher's episode prompts.

The proposal and rewording prompts are DataDesigner Jinja templates over seed columns (the
profile is a seed column, so text from the CSV is never read as Jinja). The episode prompts are
plain Python formatting: episodes run outside DataDesigner.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

KIND_GUIDE = {
    "aggregation": "one summary value of a column: a mean, total, count, extreme or distinct count",
    "filtering": "a count or summary of the rows that meet a condition on one or more columns",
    "group-by": "a value per group of a categorical column, or the group that stands out",
    "statistics": "a statistic such as a standard deviation, a correlation, or the p-value of "
    "a test (t-test, chi-square) from scipy.stats",
}

AnswerType = Literal["number", "p_value", "text", "list", "dict", "table", "boolean"]


class ProposedQuestion(BaseModel):
    """What the model proposes for one row (DataDesigner's structured output)."""

    question: str = Field(description="The question, standalone, naming columns exactly.")
    answer_format: str = Field(
        description='Exactly what to submit, e.g. "a number rounded to 2 decimals" or "a dict '
        'mapping region to mean sales, rounded to 2 decimals".'
    )
    hint: str = Field(
        description="How to compute the answer: the columns, filters, groupings and functions."
    )
    answer_type: AnswerType = Field(description="The kind of value the answer is.")


PROPOSE = """\
You explore a dataset and write one question that a data analyst answers by running pandas \
code on it, with a hint for solving it.

<profile>
{{ profile }}
</profile>

Write one {{ kind }} question ({{ kind_guide }}) that involves the column {{ focus }}.
- Its answer must follow exactly from the file with pandas, numpy or scipy: a number, a short \
text value, a list, a dict or a small table; never an opinion, an explanation or a chart.
- Name columns and values exactly as they appear in the file.
- answer_format says precisely what to submit, including rounding and, for a dict or table, \
its keys and values.
- hint says how to compute it: the columns, filters, groupings and functions to use."""

VERBALIZE = """\
Reword this question about the file {{ csv_name }} the way a data analyst would ask it.
Keep every column name, value and number exactly as written; do not add, drop or change any \
condition; do not say how to compute it. Reply with the reworded question only.

Question: {{ template_question }}"""

SYSTEM = """\
You are a data analyst who answers questions about a CSV file by writing Python.

The file {name} is already loaded as the pandas DataFrame `df` ({rows} rows); its path is \
CSV_PATH (read-only). pandas (pd), numpy (np) and scipy are installed; there is no network.

How to work:
- Each reply contains exactly one ```python code block. It runs in a persistent session \
(variables survive between replies), like a notebook cell: you are shown what it prints and \
the value of its last line.
- Look at what you need; keep printed output short.
- When you know the answer, call submit(answer) in a code block. That ends the task. Submit \
the value itself in the requested format (a number, text, list, dict or DataFrame): an answer \
that is only printed or written in words does not count.
- hook(value, name="...") records an intermediate value worth checking.

A reply looks like this:
```python
df["some_column"].describe()
```
and, once you know the answer:
```python
submit(round(df["some_column"].mean(), 2))
```

{profile}"""

USER = "Question: {question}\nAnswer format: {answer_format}"
HINT = "Hint: {hint}"
REPLY = "Reply with one ```python code block."
OUTPUT = "Output:\n{output}\n\nOnce you know the answer, submit it: submit(answer)."
FORMAT = (
    "Your reply held no Python code, so nothing ran. Reply with one ```python code block; "
    "call submit(answer) in it once you know the answer."
)
ONLY_FIRST = "[only the first code block ran]"


def system_prompt(name: str, rows: int, profile_text: str) -> str:
    return SYSTEM.format(name=name, rows=rows, profile=profile_text)


def user_prompt(question: str, answer_format: str, hint: str | None) -> str:
    text = USER.format(question=question.strip(), answer_format=answer_format.strip())
    if hint:
        text += "\n" + HINT.format(hint=hint.strip())
    return f"{text}\n{REPLY}"  # small models otherwise answer in words
