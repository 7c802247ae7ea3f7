"""The structured output the generator writes: one whole tool-use conversation per row.

Why one structured column for the whole conversation, not a column per turn: the calls of a
later step depend on the outputs of earlier ones, and a single generation keeps the request,
the calls, their (simulated) outputs and the final answer consistent with each other.

Why a flat list of calls, each with its own output, and a flag for calls made in the same turn
instead of rounds holding lists of calls: DataDesigner's template sandbox allows no nested
loops, so only a flat list can be shown to the judge; a shallow schema is also what small
models fill in most reliably; and a call carrying its own output can never be mispaired with
another's result. Parallel calls stay expressible through `same_turn_as_previous`.

Why `arguments` is JSON text and not an object: it is what OpenAI's `tool_calls` carry, and a
free-form object inside a structured column becomes a Parquet struct whose fields differ row by
row (and an empty `{}` cannot be written at all).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class Step(BaseModel):
    thought: str = Field(
        description="What the assistant says before this call: one or two sentences on what "
        "it checks or does next and why (empty when same_turn_as_previous is true)."
    )
    name: str = Field(description="The name of one of the offered tools, exactly as given.")
    arguments: str = Field(
        description='The call\'s arguments as JSON object text, e.g. {"path": "src/app.py"}: '
        "only parameters the tool declares, every required one, with the declared types."
    )
    output: str = Field(
        description="What the tool returned for this call, realistic and specific (file "
        "content, command output with exit code, search hits, an error message)."
    )
    same_turn_as_previous: bool = Field(
        default=False,
        description="True when this call is issued together with the previous one, in the "
        "same assistant turn (independent calls made in parallel).",
    )


class Conversation(BaseModel):
    user_request: str = Field(
        description="The user's message: a concrete request about their project, as a "
        "developer would type it."
    )
    steps: list[Step] = Field(min_length=1, description="The assistant's tool calls, in order.")
    final_answer: str = Field(
        description="The assistant's final reply to the user, based on what the tools returned."
    )
