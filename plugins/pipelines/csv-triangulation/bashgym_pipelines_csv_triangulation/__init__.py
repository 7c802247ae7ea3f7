"""BashGym pipeline `csv-triangulation` and judge `triangulation`: verified CSV-analysis
question-answer episodes from sandboxed teacher runs, kept when the gold answer agrees with the
majority of independent runs.

The registrations import their modules when called: the sandbox worker imports this package in
every warm process, and must not pay for the pipeline's imports (pydantic models, DataDesigner).
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl


@hookimpl
def register_pipelines(register: Any) -> None:
    # ~0.15 s on top of this package (measured): see the docstring
    from bashgym_pipelines_csv_triangulation.pipeline import CsvTriangulationPipeline

    register("csv-triangulation", CsvTriangulationPipeline())


@hookimpl
def register_judges(register: Any) -> None:
    from bashgym_pipelines_csv_triangulation.judge import TriangulationJudge  # ~0.12 s (see above)

    register("triangulation", TriangulationJudge())
