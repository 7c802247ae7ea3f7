"""BashGym pipeline `coding-agent-sft`: diverse coding tasks solved as structured tool-use
trajectories, judged and ruff-checked, kept above thresholds, as chat SFT rows."""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_pipelines_coding_agent_sft.pipeline import CodingAgentSft


@hookimpl
def register_pipelines(register):
    register("coding-agent-sft", CodingAgentSft())
