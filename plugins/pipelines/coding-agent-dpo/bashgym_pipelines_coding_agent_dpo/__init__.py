"""BashGym pipeline `coding-agent-dpo`: two judged solutions per coding task, kept as a
preference pair only when their scores differ by a margin."""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_pipelines_coding_agent_dpo.pipeline import CodingAgentDpo


@hookimpl
def register_pipelines(register):
    register("coding-agent-dpo", CodingAgentDpo())
