"""Prompts for asking about a chunk, answering from it, and judging the answer against it.

Templates are assembled in Python from the seed's columns: the location line (`path`, lines)
appears only when the source provides those columns, so a plain text column works too.
"""

from __future__ import annotations

from collections.abc import Collection

TYPE_GUIDE = """\
Question kinds: factual = a specific fact, value, name or default the passage states; \
conceptual = why or how something works; how-to = the steps to do something; \
troubleshooting = what to do when something goes wrong; comparison = how two things the \
passage describes differ."""

STANDALONE = (
    "- The question must make sense to someone who has never seen the passage: name the tool, "
    'library, command, function or topic explicitly, and never say "the passage", "the '
    'text", "the document" or "this section".'
)
WITH_CONTEXT = "- The reader sees the passage with the question, so the question may refer to it."

ASK = """\
You write questions for a training set about a body of documentation and code.

{location}<passage>
{{{{ {text} }}}}
</passage>

{guide}

Write one {{{{ difficulty }}}} {{{{ question_type }}}} question that the passage above answers.
- Its full answer must be in the passage: ask nothing the passage does not state.
{audience}
- Ask one question, as a user of the software would. Reply with the question alone: no \
preamble, no numbering, no answer."""

ANSWER = """\
Answer the question using only the passage below.

{location}<passage>
{{{{ {text} }}}}
</passage>

Question: {{{{ question }}}}

- Base every statement on the passage and add nothing from outside it; if the passage does \
not answer part of the question, say so plainly.
- Support the answer with a short verbatim quote of the key sentence or line from the passage, \
in double quotes.
- Be direct and concise; do not mention "the passage".{cite}"""

JUDGE = """\
{instructions}

<task>
{location}<document>
{{{{ {text} }}}}
</document>

Question: {{{{ question }}}}
</task>

<response>
{{{{ answer }}}}
</response>
"""


def location(columns: Collection[str]) -> str:
    """'Source: <path>, lines a-b' as Jinja, for the columns the seed has ('' for none)."""
    if "path" not in columns:
        return ""
    text = "Source: {{ path }}"
    if {"start_line", "end_line"} <= set(columns):
        text += ", lines {{ start_line }}-{{ end_line }}"
    return text


def ask_prompt(text: str, columns: Collection[str], standalone: bool) -> str:
    where = location(columns)
    return ASK.format(
        text=text,
        location=f"{where}\n" if where else "",
        guide=TYPE_GUIDE,
        audience=STANDALONE if standalone else WITH_CONTEXT,
    )


def answer_prompt(text: str, columns: Collection[str], cite: bool) -> str:
    where = location(columns)
    ending = ""
    if cite and where:
        ending = f'\n- End with one line exactly like "{where}".'
    return ANSWER.format(text=text, location=f"{where}\n" if where else "", cite=ending)


def judge_prompt(instructions: str, text: str, columns: Collection[str]) -> str:
    where = location(columns)
    return JUDGE.format(
        instructions=instructions.strip(), text=text, location=f"{where}\n" if where else ""
    )
