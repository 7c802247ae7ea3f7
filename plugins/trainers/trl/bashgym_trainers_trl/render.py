"""Conversations rendered with the student's own chat template, as TRL trains on them.

Why render here instead of handing TRL the `messages` column: datasets stores a column as one
Arrow type, and tool schemas differ per row (one tool's `parameters` has `path`, another's
`command`): Arrow merges them into one struct and fills the missing keys with None, which the
chat template then prints into every tool. Rendering each row with its own `tools` first keeps
the text exactly what the student sees when it serves.
"""

from __future__ import annotations

from typing import Any


def render(rows: list[dict[str, Any]], tokenizer: Any, loss: str) -> list[dict[str, str]]:
    """One TRL example per conversation: {"prompt", "completion"} (loss on the assistant's
    answer, when every conversation has one assistant turn) or {"text"} (loss on everything:
    asked for, multi-turn tool use, or a template whose prompt is not a prefix of the whole
    conversation for some row, since one dataset cannot mix the two shapes)."""
    texts, pairs = [], []
    for row in rows:
        messages, tools = row["messages"], row.get("tools") or None
        full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
        texts.append({"text": full})
        if loss == "completion":
            prompt = tokenizer.apply_chat_template(
                messages[:-1], tools=tools, tokenize=False, add_generation_prompt=True
            )
            if full.startswith(prompt):
                # TRL appends the EOS token to a completion that lacks it: end at the template's
                # end-of-turn mark (Qwen: <|im_end|>), not the newline after it
                pairs.append({"prompt": prompt, "completion": full[len(prompt) :].rstrip("\n")})
    # a tool-use conversation's earlier assistant turns (the tool calls) are what the student
    # must learn: "completion" keeps to one-answer conversations, the rest train on everything
    single = all(sum(m.get("role") == "assistant" for m in r["messages"]) == 1 for r in rows)
    return pairs if loss == "completion" and single and len(pairs) == len(rows) else texts
