"""BashGym pipelines/coding-agent-dpo: Coding-agent DPO: two judged solutions per task, kept as a preference pair only when scores differ by a margin."""
