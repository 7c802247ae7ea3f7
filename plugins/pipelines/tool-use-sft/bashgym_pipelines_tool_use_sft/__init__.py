"""BashGym pipeline `tool-use-sft`: structured tool-use conversations over a fixed tool set,
as OpenAI tool-use SFT rows with the tools schema and system prompt."""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_pipelines_tool_use_sft.pipeline import ToolUseSftPipeline


@hookimpl
def register_pipelines(register):
    register("tool-use-sft", ToolUseSftPipeline())
