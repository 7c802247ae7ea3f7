"""Prompts for writing and judging one tool-use conversation.

The tool schemas go into the prompts verbatim inside `{% raw %}` blocks: JSON braces and any
`{#` in a description must reach the model as text, not be read as Jinja. The judge sees each
call's arguments as a Python dict, not JSON text: DataDesigner parses JSON strings in a row
before rendering, and its template sandbox has no `tojson`. The judge is told so, lest it mark
down single quotes as malformed arguments.
"""

from __future__ import annotations

import json
from typing import Any

from bashgym.contracts import InputError

WRITE = """\
Write one realistic training example of a coding assistant that solves a user's request by \
calling tools.

Setting: the user works on {{{{ domain }}}} and wants the assistant to {{{{ scenario }}}}.
Difficulty: {{{{ difficulty }}}}. Use about {{{{ num_tool_calls }}}} tool call(s) in total. \
Calls are listed in order; a call that does not depend on the one before may be made in the \
same assistant turn (set same_turn_as_previous).

The assistant can call ONLY these tools (OpenAI function schemas):
{tools}

Rules:
- Every call names one of the tools above exactly, and its `arguments` is JSON object text \
that validates against that tool's `parameters`: every required parameter, no parameters the \
tool does not declare, the declared types.
- Each call's `output` is what the tool would really return: concrete file contents, command \
output with exit codes, search hits with paths and line numbers, or an error. Outputs stay \
consistent with each other and with the request.
- Later calls react to earlier outputs (e.g. read the file a search found, rerun a test \
after an edit).
- The final answer tells the user what was found or changed, based only on the tool outputs, \
and is honest about anything that failed.
- Use concrete names, paths and values; no placeholders like "foo" or "example.py".
"""

JUDGE_TASK = """\
{instructions}

Available tools (OpenAI function schemas):
{tools}

Every call's arguments have already been checked against its tool's schema; below they are \
shown as parsed objects. Judge whether they are the right values for the request.

<task>
{{{{ conversation.user_request }}}}
</task>

<response>
{{% for step in conversation.steps %}}{{% if not step.same_turn_as_previous %}}\
Assistant: {{{{ step.thought }}}}
{{% endif %}}Tool call: {{{{ step.name }}}}({{{{ step.arguments }}}})
Tool result: {{{{ step.output }}}}
{{% endfor %}}Final answer: {{{{ conversation.final_answer }}}}
</response>
"""


def tools_block(tools: list[dict[str, Any]]) -> str:
    """The tools as indented JSON, escaped from Jinja."""
    text = json.dumps(tools, indent=2, ensure_ascii=False)
    if "endraw" in text:
        raise InputError("tool schemas must not contain the text 'endraw'")
    return "{% raw %}" + text + "{% endraw %}"


def write_prompt(tools: list[dict[str, Any]]) -> str:
    return WRITE.format(tools=tools_block(tools))


def judge_prompt(instructions: str, tools: list[dict[str, Any]]) -> str:
    return JUDGE_TASK.format(instructions=instructions.strip(), tools=tools_block(tools))
