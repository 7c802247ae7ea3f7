"""The loss mask: a tool-use conversation trains on the assistant's turns (its tool calls and
answer, each through its end-of-turn mark), never on the system prompt, the task or the tools'
results. Needs only transformers' tokenizer (the train extra); no model, no torch."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers", reason="transformers is not installed (the train extra)")
from collections.abc import Callable
from typing import Any

from bashgym_trainers_trl.render import render

from bashgym.contracts import InputError

Make = Callable[..., Any]  # conftest's make_tokenizer

# Qwen2.5's handling of tool calls and results, cut down: calls as <tool_call> JSON in the
# assistant's turn, results grouped in a user turn as <tool_response>.
TOOLS_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'tool' %}"
    "{% if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}<|im_start|>user{% endif %}"
    "\n<tool_response>\n{{ m['content'] }}\n</tool_response>"
    "{% if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}<|im_end|>\n{% endif %}"
    "{% else %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
    "{% for c in m.get('tool_calls') or [] %}<tool_call>\n"
    '{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}'
    "\n</tool_call>{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
ARGUMENTS = {"path": "a.py", "content": "x = 1"}
CALL = {"type": "function", "function": {"name": "write_file", "arguments": ARGUMENTS}}
CONVERSATION = [
    {"role": "system", "content": "You are a coding agent. SYSTEM-PROMPT"},
    {"role": "user", "content": "Create a.py. THE-TASK"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "content": "wrote 5 bytes to a.py TOOL-RESULT"},
    {"role": "assistant", "content": "Done: the file is written."},
]


def learned(example: dict, tok: Any) -> str:
    """The text that carries loss."""
    ids = [i for i, m in zip(example["input_ids"], example["assistant_masks"], strict=True) if m]
    return tok.decode(ids)


def test_only_the_assistants_turns_carry_the_loss(make_tokenizer: Make) -> None:
    tok = make_tokenizer(TOOLS_TEMPLATE)
    done = render([{"messages": CONVERSATION}], tok, "completion")
    assert done.loss_on == "the assistant's turns" and done.whole == 0 and done.cut_off == 0
    (example,) = done.rows
    text = learned(example, tok)
    assert text == (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.py", "content": "x = 1"}}'
        "\n</tool_call><|im_end|>Done: the file is written.<|im_end|>"
    )
    full = tok.decode(example["input_ids"])
    for unlearned in ("SYSTEM-PROMPT", "THE-TASK", "TOOL-RESULT", "<|im_start|>assistant"):
        assert unlearned in full and unlearned not in text


def test_all_trains_on_every_token(make_tokenizer: Make) -> None:
    tok = make_tokenizer(TOOLS_TEMPLATE)
    done = render([{"messages": CONVERSATION}], tok, "all")
    assert done.loss_on == "every token"
    assert "TOOL-RESULT" in done.rows[0]["text"] and "SYSTEM-PROMPT" in done.rows[0]["text"]


def test_turns_not_prefixes_train_on_everything_and_are_counted(make_tokenizer: Make) -> None:
    # the last message rendered apart: a conversation's start is no prefix of the whole
    odd = TOOLS_TEMPLATE.replace(
        "<|im_start|>{{ m['role'] }}\n",
        "<|im_start|>{{ m['role'] }}{% if loop.last %}!{% endif %}\n",
    )
    tok = make_tokenizer(odd)
    done = render([{"messages": CONVERSATION}], tok, "completion")
    assert done.whole == 1
    assert all(done.rows[0]["assistant_masks"])


def test_an_answer_past_the_cut_is_left_out_and_counted(make_tokenizer: Make) -> None:
    tok = make_tokenizer(TOOLS_TEMPLATE)
    short = {"messages": [*CONVERSATION[:2], {"role": "assistant", "content": "ok"}]}
    done = render([{"messages": CONVERSATION}, short], tok, "completion", max_length=8)
    assert done.cut_off == 2 and done.rows == []
    done = render([{"messages": CONVERSATION}], tok, "completion", max_length=4096)
    assert done.cut_off == 0 and done.cut_short == 0 and len(done.rows[0]["input_ids"]) < 4096
    # cut inside the answer that ends the turn: kept (the tool call is learned), and counted
    whole = done.rows[0]
    ends = max(i for i, m in enumerate(whole["assistant_masks"]) if m)
    done = render([{"messages": CONVERSATION}], tok, "completion", max_length=ends - 2)
    assert done.cut_off == 0 and done.cut_short == 1
    assert done.rows[0]["input_ids"] == whole["input_ids"][: ends - 2]


def test_a_slow_tokenizer_is_refused_with_the_option_that_works() -> None:
    class Slow:
        is_fast = False

    with pytest.raises(InputError, match=r"trainer\.loss=all"):
        render([{"messages": CONVERSATION}], Slow(), "completion")
