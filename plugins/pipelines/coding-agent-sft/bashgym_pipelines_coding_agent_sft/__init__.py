"""BashGym pipelines/coding-agent-sft: Coding-agent SFT: diverse tasks, structured tool-use trajectories, judged and ruff-checked, as chat rows."""
