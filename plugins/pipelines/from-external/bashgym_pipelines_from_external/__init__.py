"""BashGym pipeline `from-external`: instruction/response rows generated from any source's rows
through a column mapping, judged with the instruction-response rubric."""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_pipelines_from_external.pipeline import FromExternalPipeline


@hookimpl
def register_pipelines(register):
    register("from-external", FromExternalPipeline())
