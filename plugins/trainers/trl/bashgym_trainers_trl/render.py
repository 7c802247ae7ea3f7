"""Conversations rendered with the student's own chat template, as TRL trains on them.

Why render here instead of handing TRL the `messages` column: datasets stores a column as one
Arrow type, and tool schemas differ per row (one tool's `parameters` has `path`, another's
`command`): Arrow merges them into one struct and fills the missing keys with None, which the
chat template then prints into every tool. Rendering each row with its own `tools` first keeps
the text exactly what the student sees when it serves.

Why the loss mask is computed here: TRL's own `assistant_only_loss` needs a chat template with
`{% generation %}` marks, which Qwen2.5's (and most served models') lack. Without a mask, a
tool-use conversation trains on every token: the system prompt and tool schemas (most of the
text), the user's task and the tools' results. A student trained so learns to write a tool's
result (`wrote 5 bytes to …`) as its own next move, and the few tokens that end its turn weigh
almost nothing. So each assistant turn's span is found by rendering the conversation up to it
(the template's prompt for that turn, then the turn), and only those tokens, the template's
end-of-turn mark included, carry loss: what TRL documents for a pre-tokenized dataset
(`input_ids` with `assistant_masks`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bashgym.contracts import InputError


@dataclass
class Rendered:
    """TRL examples, and how many conversations had to train on every token (their template
    does not render a conversation's start as a prefix of the whole, so no turn could be cut)."""

    rows: list[dict[str, Any]]
    loss_on: str  # what carries the loss, for the metrics and report
    whole: int = 0
    cut_off: int = 0  # conversations left out: no assistant token before max_length
    cut_short: int = 0  # conversations kept, whose later assistant tokens fell past the cut


def assistant_spans(
    messages: list[dict[str, Any]], tools: Any, tokenizer: Any, full: str
) -> list[range]:
    """Character spans of the assistant turns in `full`, the conversation's rendering, each
    from the end of the template's prompt for it through its end-of-turn mark; [] when the
    template's renderings are not prefixes of each other (no span can be trusted)."""
    spans = []
    for i, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        prompt = tokenizer.apply_chat_template(
            messages[:i], tools=tools, tokenize=False, add_generation_prompt=True
        )
        through = tokenizer.apply_chat_template(messages[: i + 1], tools=tools, tokenize=False)
        if not (through.startswith(prompt) and full.startswith(through)):
            return []
        # the turn ends at the template's end-of-turn mark (Qwen: <|im_end|>), not the newline
        # after it, which the model never has to write
        spans.append(range(len(prompt), len(through.rstrip("\n"))))
    return spans


def masked(messages: list[dict[str, Any]], tools: Any, tokenizer: Any) -> tuple[dict, bool]:
    """{"input_ids", "assistant_masks"} for one conversation, and whether the mask covers only
    the assistant's turns (False: every token, the spans could not be found)."""
    full = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    spans = assistant_spans(messages, tools, tokenizer, full)
    encoded = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
    if not spans:
        return {"input_ids": ids, "assistant_masks": [1] * len(ids)}, False
    mask = [int(any(start in span for span in spans)) for start, _ in offsets]
    return {"input_ids": ids, "assistant_masks": mask}, True


def render(
    rows: list[dict[str, Any]], tokenizer: Any, loss: str, max_length: int | None = None
) -> Rendered:
    """TRL examples for `rows`. loss="completion": tokenized, cut to `max_length`, with the
    loss on the assistant's turns only (a conversation with no assistant token left before the
    cut is left out and counted: it would be a step with nothing to learn; one that loses later
    assistant tokens, such as the final answer that ends a tool-use turn, is counted: a student
    never shown how its turn ends does not stop); loss="all":
    {"text"}, every token (TRL cuts it)."""
    if loss == "all":
        texts = [
            {"text": tokenizer.apply_chat_template(
                r["messages"], tools=r.get("tools") or None, tokenize=False
            )}
            for r in rows
        ]  # fmt: skip
        return Rendered(texts, "every token", whole=len(texts))
    if not getattr(tokenizer, "is_fast", False):
        raise InputError(
            "the assistant-only loss needs a fast tokenizer (character offsets); "
            "use --set trainer.loss=all"
        )
    done = Rendered([], "the assistant's turns")
    for row in rows:
        example, only_assistant = masked(row["messages"], row.get("tools") or None, tokenizer)
        if max_length and len(example["input_ids"]) > max_length:
            lost = 1 in example["assistant_masks"][max_length:]
            example = {k: v[:max_length] for k, v in example.items()}
            if 1 not in example["assistant_masks"]:
                done.cut_off += 1
                continue
            done.cut_short += lost
        done.rows.append(example)
        done.whole += not only_assistant
    return done
