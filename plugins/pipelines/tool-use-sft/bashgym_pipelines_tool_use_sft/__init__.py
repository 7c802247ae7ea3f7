"""BashGym pipelines/tool-use-sft: Tool-use SFT: structured conversations over a fixed tool set, as OpenAI tool-use rows with the tools schema."""
