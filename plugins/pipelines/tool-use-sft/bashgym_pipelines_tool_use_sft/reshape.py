"""A generated conversation → OpenAI tool-use messages (what the nemo-jsonl sink validates).

Each step opens an assistant message (its thought as content, its call in `tool_calls`)
unless it is flagged as made in the same turn as the previous step, in which case its call
joins that message; every turn's calls are answered by `tool` messages in order, and the final
answer closes the conversation. Call ids are `call_<n>`, unique within a conversation, which
is all a chat template or trainer needs to pair a result with its call. Arguments are
re-serialized from the parsed object, so every row carries the same canonical JSON text.
"""

from __future__ import annotations

import json
from typing import Any

from bashgym_pipelines_tool_use_sft.tools import conversation_of, parse_arguments

Message = dict[str, Any]


class NotAConversation(ValueError):
    """The cell cannot become messages; the message is the drop reason."""


def to_messages(cell: Any, system_prompt: str) -> list[Message]:
    conversation = conversation_of(cell)
    if conversation is None:
        raise NotAConversation("conversation is missing")
    messages: list[Message] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": str(conversation.get("user_request") or "").strip()},
    ]
    turns: list[tuple[Message, list[Message]]] = []  # (assistant message, its tool results)
    for n, step in enumerate(conversation.get("steps") or [], 1):
        call_id = f"call_{n}"
        try:
            arguments = parse_arguments(step.get("arguments"))
        except ValueError as exc:
            raise NotAConversation(f"call {n}: {exc}") from None
        call = {
            "id": call_id,
            "type": "function",
            "function": {
                "name": step["name"],
                "arguments": json.dumps(arguments, ensure_ascii=False),
            },
        }
        result = {
            "role": "tool",
            "tool_call_id": call_id,
            "name": step["name"],
            "content": str(step.get("output") or ""),
        }
        if turns and step.get("same_turn_as_previous"):
            turns[-1][0]["tool_calls"].append(call)
            turns[-1][1].append(result)
        else:
            thought = str(step.get("thought") or "").strip()
            turns.append(
                ({"role": "assistant", "content": thought, "tool_calls": [call]}, [result])
            )
    if not turns:
        raise NotAConversation("no tool calls")
    for assistant, results in turns:
        messages += [assistant, *results]
    messages.append(
        {"role": "assistant", "content": str(conversation.get("final_answer") or "").strip()}
    )
    return messages
