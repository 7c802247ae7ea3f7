"""Every SFT line renders through a real chat template: Qwen2.5's, which supports tools.

The ideal check is `transformers`' `tokenizer.apply_chat_template`, but neither `transformers`
nor a small tokenizer shipped inside a PyPI package is installed here, so the template text
(Qwen2.5-Instruct's `chat_template` from its tokenizer_config.json) is a fixture and is rendered
with jinja2 the way transformers does it: an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks, the loopcontrols extension and a `tojson` filter that does not HTML-escape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pandas as pd
import pytest
from bashgym_sinks_nemo_jsonl.options import NemoJsonlOptions
from bashgym_sinks_nemo_jsonl.sink import NemoJsonlSink
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

from bashgym.records import trace_to_row

CALL = '<tool_call>\n{"name": "'  # a rendered call, not the format hint in the tools preamble


def render(template: str, line: dict[str, Any]) -> str:
    def tojson(value: Any, indent: int | None = None) -> str:
        return json.dumps(value, ensure_ascii=False, indent=indent)

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    env.filters["tojson"] = tojson
    return env.from_string(template).render(
        messages=line["messages"], tools=line.get("tools"), add_generation_prompt=False
    )


def sft_lines(run_ctx, rows, **options: Any) -> tuple[Path, list[dict[str, Any]]]:
    paths = (
        NemoJsonlSink()
        .write(pd.DataFrame(rows), NemoJsonlOptions(**options), run_ctx, "traces")
        .paths
    )
    out = [json.loads(x) for p in paths[:2] for x in p.read_text().splitlines()]
    assert out
    return paths[0], out


@pytest.mark.parametrize("fmt", ["tool-use", "chat"])
def test_every_line_renders_with_calls_results_and_schema(run_ctx, make_trace, qwen_template, fmt):
    rows = [trace_to_row(make_trace(i, system_prompt=None if i % 2 else "Sys.")) for i in range(6)]
    _, lines = sft_lines(run_ctx, rows, format=fmt, val_fraction=0.3)
    assert len(lines) == 6
    for line in lines:
        text = render(qwen_template, line)
        system = line["messages"][0]["content"]
        assert text.startswith(f"<|im_start|>system\n{system}")
        assert "You are Qwen" not in text  # our system prompt, never the template's fallback
        assert text.endswith(
            f"<|im_start|>assistant\n{line['messages'][-1]['content']}<|im_end|>\n"
        )
        n = line["messages"][1]["content"].split("#")[1].split()[0]
        if fmt == "tool-use":
            assert '"name": "Read"' in text and '"name": "Bash"' in text  # schema and calls
            assert text.count(CALL) == 3 and text.count("<tool_response>") == 3
            assert f"def check(token):  # v{n}" in text and f"1 passed ({n})" in text
            assert "# Tools" in text and '"required": ["command"]' in text
        else:
            assert "<tool_call>" not in text and "<tool_response>" not in text
            assert "I'll read it first.\n\nFixed:" in text


def test_lines_read_back_by_datasets_still_render(run_ctx, make_trace, qwen_template, tmp_path):
    train, _ = sft_lines(run_ctx, [trace_to_row(make_trace(i)) for i in range(3)], val_fraction=0)
    ds = datasets.load_dataset(
        "json", data_files=str(train), split="train", cache_dir=str(tmp_path / "hf")
    )
    for row in ds:
        text = render(qwen_template, row)
        assert text.count(CALL) == 3 and "1 passed" in text


def test_arguments_as_objects_render_as_json_not_a_json_string(run_ctx, make_trace, qwen_template):
    # HF templates `tojson` the arguments: OpenAI-style JSON text comes out encoded twice,
    # which is why `tool_arguments = "object"` exists for template-based trainers.
    rows = [trace_to_row(make_trace(1))]
    _, as_text = sft_lines(run_ctx, rows, val_fraction=0)
    assert '"arguments": "{\\"file_path\\": \\"auth.py\\"}"' in render(qwen_template, as_text[0])
    _, as_object = sft_lines(run_ctx, rows, val_fraction=0, tool_arguments="object")
    assert '"arguments": {"file_path": "auth.py"}' in render(qwen_template, as_object[0])
