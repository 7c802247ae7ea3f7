"""BashGym pipelines `coding-agent-sft` and `coding-agent-dpo`: diverse coding tasks solved as
structured tool-use trajectories, judged and ruff-checked — kept above thresholds as chat SFT
rows, or paired by judged score into DPO preference rows. One distribution: they share the
task samplers, the trajectory model and the checks."""

from __future__ import annotations

from bashgym import hookimpl


@hookimpl
def register_pipelines(register):
    # ~0.39 s on top of this package (pandas, DataDesigner's config; measured): imported when the
    # registry is collected, not by every command that loads the plugins
    from bashgym_pipelines_coding_agent.dpo import CodingAgentDpo
    from bashgym_pipelines_coding_agent.sft import CodingAgentSft

    register("coding-agent-sft", CodingAgentSft())
    register("coding-agent-dpo", CodingAgentDpo())
