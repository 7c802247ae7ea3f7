"""Reading a teacher's reply: the code it runs, and what is not code."""

from __future__ import annotations

import pytest
from bashgym_pipelines_csv_triangulation.agent import first_code


@pytest.mark.parametrize(
    ("reply", "code", "more"),
    [
        ("Let me look.\n```python\nprint(df.head())\n```", "print(df.head())\n", False),
        ("```py\nx = 1\n```\nthen\n```python\nsubmit(x)\n```", "x = 1\n", True),
        ("```\nsubmit(len(df))\n```", "submit(len(df))\n", False),
        ("submit(round(df['revenue'].sum(), 2))", "submit(round(df['revenue'].sum(), 2))", False),
        ("df['revenue'].sum()", "df['revenue'].sum()", False),
        ("The answer is 42.", None, False),  # words
        ("110.59", None, False),  # a bare value is an answer in words, not code
        ("answer", None, False),
        ("", None, False),
    ],
)
def test_the_code_of_a_reply(reply, code, more):
    assert first_code(reply) == (code, more)
