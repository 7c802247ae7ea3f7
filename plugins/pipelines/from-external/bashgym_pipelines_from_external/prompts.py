"""Jinja for the presence flags, the prompt of a row, the writer's prompt and system prompt.

Two DataDesigner behaviours shape these templates. An expression that renders empty (or only
whitespace) makes DataDesigner drop the row with nothing but a log line, so nothing here may
render empty: whether a role has text is a bool column of its own (`gen_has_instruction`),
and the text columns are skipped, not emptied, where it is False; the filter then drops those
rows with a reason. And DataDesigner parses every cell that is valid JSON before rendering
("4" becomes 4, "null" None), so a cell is tested with `is not none and x == x` (NaN, from a
CSV's empty cell, is the one value unequal to itself) and rendered through `| string`.
"""

from __future__ import annotations

from collections.abc import Mapping

HAS_INSTRUCTION, HAS_REFERENCE = "gen_has_instruction", "gen_has_reference"

IMPROVE = """\
Below is a task and a reference answer someone wrote for it. Write the best possible answer \
to the task: keep what the reference gets right, fix its errors, fill its gaps, and follow \
every instruction and constraint of the task. Reply with the answer only: no preamble, and no \
mention of the reference.

<task>
{{{{ gen_prompt }}}}
</task>

<reference_answer>
{{{{ {reference} | string | trim }}}}
</reference_answer>"""


def has_text(column: str) -> str:
    """A Jinja test: the cell holds non-blank text (not None, NaN or whitespace)."""
    return f'({column} is not none and {column} == {column} and ({column} | string | trim) != "")'


def flag_expr(column: str) -> str:
    return "{{ " + has_text(column) + " }}"


def prompt_expr(mapping: Mapping[str, str]) -> str:
    """The SFT prompt: the instruction, then the context (if any) after a blank line."""
    expr = "{{ " + mapping["instruction"] + " | string | trim }}"
    if "context" in mapping:
        context = mapping["context"]
        expr += (
            f"{{% if {has_text(context)} %}}\n\n{{{{ {context} | string | trim }}}}{{% endif %}}"
        )
    return expr


def reference_expr(mapping: Mapping[str, str]) -> str:
    return "{{ " + mapping["reference_answer"] + " | string | trim }}"


def writer_prompt(mapping: Mapping[str, str], reference: str) -> str:
    """The prompt itself, or (improve mode, where the row has a reference) the rewrite task."""
    if reference != "improve" or "reference_answer" not in mapping:
        return "{{ gen_prompt }}"
    return (
        f"{{% if {HAS_REFERENCE} %}}"
        + IMPROVE.format(reference=mapping["reference_answer"])
        + "{% else %}{{ gen_prompt }}{% endif %}"
    )


def raw(value: str) -> str:
    """Literal text inside a template."""
    return "{% raw %}" + value.replace("{% endraw %}", "") + "{% endraw %}"


def system_expr(mapping: Mapping[str, str], default: str) -> str:
    """The row's system prompt: its mapped column where it has text, else `default`."""
    if "system_prompt" not in mapping:
        return raw(default)
    column = mapping["system_prompt"]
    return (
        f"{{% if {has_text(column)} %}}{{{{ {column} | string | trim }}}}"
        f"{{% else %}}{raw(default)}{{% endif %}}"
    )
