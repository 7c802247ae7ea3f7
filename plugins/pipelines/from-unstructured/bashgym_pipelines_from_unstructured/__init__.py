"""BashGym pipeline `from-unstructured`: grounded question/answer rows from document chunks,
judged for groundedness."""

from __future__ import annotations

from bashgym import hookimpl
from bashgym_pipelines_from_unstructured.pipeline import FromUnstructuredPipeline


@hookimpl
def register_pipelines(register):
    register("from-unstructured", FromUnstructuredPipeline())
