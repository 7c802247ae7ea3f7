"""What a user may write for the `csv-triangulation` pipeline and the `triangulation` judge.

Plain config, kept apart from the code that acts on it; `--set pipeline.sandbox.cpu_s=5` and
`--set pipeline.match.float_tolerance=0.01` reach the nested models.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from bashgym.contracts import Options, PipelineOptions
from bashgym_pipelines_csv_triangulation.matching import MatchOptions, nested_schema

KINDS = ("aggregation", "filtering", "group-by", "statistics")
CSV_REQUIRED = "required: set pipeline.csv=PATH to a CSV file"


class SandboxOptions(Options):
    """Where and under which limits the teachers' code runs (see `worker` and `pool`)."""

    model_config = ConfigDict(json_schema_extra=nested_schema)

    environment: str | None = Field(
        default=None,
        description="Environment plugin the workers run in; default: bubblewrap where it is "
        "available, else local (noted in run.json: local does not protect files).",
    )
    environment_options: dict[str, Any] = Field(
        default_factory=dict,
        description="Options for that environment (e.g. {memory_mb = 4096}); its defaults "
        "otherwise.",
    )
    workers: int = Field(
        default=2, ge=1, le=64, description="Warm worker processes (episodes run at once)."
    )
    cpu_s: float = Field(
        default=10, gt=0, description="CPU seconds per code cell (whole seconds, rounded up)."
    )
    wall_s: float = Field(default=30, gt=0, description="Wall-clock seconds per code cell.")
    memory_mb: int = Field(
        default=1024, ge=16, description="Memory an episode may add to the warm worker's."
    )
    file_size_mb: int = Field(
        default=16, ge=1, description="Largest file (and captured output) a cell may write."
    )
    output_limit: int = Field(
        default=4000, ge=200, description="Characters of a cell's output shown to the model."
    )
    answer_limit: int = Field(
        default=262_144, ge=1024, description="Bytes of a submitted answer as JSON."
    )
    preload: list[str] = Field(
        default_factory=lambda: ["pandas", "numpy", "scipy.stats"],
        description="Modules each warm worker imports once, before any episode.",
    )
    start_timeout_s: float = Field(
        default=120, gt=0, description="Seconds a worker may take to start and load the CSV."
    )

    def worker_limits(self) -> dict[str, Any]:
        """The per-cell limits the worker enforces (`worker.DEFAULT_LIMITS` keys)."""
        return {
            "cpu_s": self.cpu_s,
            "wall_s": self.wall_s,
            "memory_mb": self.memory_mb,
            "file_size_mb": self.file_size_mb,
            "output_limit": self.output_limit,
            "answer_limit": self.answer_limit,
        }


class CsvTriangulationOptions(PipelineOptions):
    csv: str = Field(description="The CSV file questions are asked about (read-only to code).")
    questions: Literal["llm", "templates"] = Field(
        default="llm",
        description="llm: the model explores the CSV profile and proposes questions with "
        "hints; templates: profiling fills aggregation, filtering, group-by and statistics "
        "templates, whose code is the gold run (no model needed for it).",
    )
    kinds: list[str] = Field(
        default_factory=lambda: list(KINDS),
        description="Question kinds to ask (sampled per row for llm; templates to use).",
    )
    model: str = Field(default="default", description="Model alias of the teacher episodes.")
    question_model: str | None = Field(
        default=None, description="Model alias that proposes or words questions (default: model)."
    )
    verbalize: bool = Field(
        default=True,
        description="templates: have question_model reword each template question; false "
        "keeps the template wording (no model call to make questions).",
    )
    consistency_runs: int = Field(
        default=5, ge=1, le=25, description="Runs without the hint per question (N)."
    )
    max_turns: int = Field(
        default=6, ge=1, le=40, description="Code cells an episode may run before it fails."
    )
    temperature: float | None = Field(
        default=0.7,
        ge=0,
        le=2,
        description="Teacher temperature for consistency runs (independent samples); None: "
        "the alias's own.",
    )
    gold_temperature: float | None = Field(
        default=0.0, ge=0, le=2, description="Teacher temperature for the gold run."
    )
    max_tokens: int | None = Field(
        default=1024, ge=16, description="Largest teacher reply per turn (None: the alias's)."
    )
    concurrency: int = Field(default=2, ge=1, le=64, description="Questions worked on at once.")
    sft_from: Literal["consistency", "gold"] = Field(
        default="consistency",
        description="Which verified trace becomes the SFT conversation: the shortest "
        "hint-free run that agreed with the gold answer, or the gold run (its hint removed).",
    )
    sample_rows: int = Field(
        default=5, ge=0, le=50, description="CSV rows shown in the profile the model reads."
    )
    match: MatchOptions = Field(
        default_factory=MatchOptions,
        description="Tolerances and majority for triangulation (the judge's defaults).",
    )
    sandbox: SandboxOptions = Field(
        default_factory=SandboxOptions, description="Where the code runs, and its limits."
    )
    episodes_file: bool = Field(
        default=True,
        description="Also write every episode, verified or not, to "
        "RUN_DIR/csv-triangulation/episodes.jsonl (scrubbed like the sinks' rows).",
    )

    @model_validator(mode="before")
    @classmethod
    def _csv_missing_reaches_its_check(cls, data: Any) -> Any:
        """Pydantic's own "Field required" does not say how to set the option, and a missing
        field never reaches a field validator: so an absent `csv` goes on as None, for
        `_csv_given` to word. The field stays required (no default) for `bashgym options`."""
        if isinstance(data, dict) and "csv" not in data:
            return {**data, "csv": None}
        return data

    @field_validator("csv", mode="before")
    @classmethod
    def _csv_given(cls, value: Any) -> Any:
        """`csv: required: set pipeline.csv=PATH ...` wherever the options are checked
        (validate, run, export, `pipeline list`, the API), as the bad-path error says it."""
        if value is None or (isinstance(value, str) and not value.strip()):
            raise ValueError(CSV_REQUIRED)
        return value

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str]) -> list[str]:
        unknown = sorted(set(kinds) - set(KINDS))
        if unknown or not kinds:
            raise ValueError(f"kinds must be some of {', '.join(KINDS)}; got {unknown or kinds}")
        return kinds

    @model_validator(mode="after")
    def _alias(self) -> CsvTriangulationOptions:
        self.question_model = self.question_model or self.model
        return self


class TriangulationJudgeOptions(Options):
    """Tolerances the judge re-checks with; each unset one is what the pipeline used for the
    row (its `match` column), else MatchOptions' default."""

    float_tolerance: float | None = Field(
        default=None, ge=0, description="Numbers agree within this absolute difference."
    )
    relative_tolerance: float | None = Field(
        default=None, ge=0, description="Numbers also agree within this fraction."
    )
    p_value_tolerance: float | None = Field(
        default=None, ge=0, description="p-values agree within this absolute difference."
    )
    min_majority: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="The majority must hold more than this share of the consistency runs.",
    )
    require_messages: bool = Field(
        default=True,
        description="Drop a row verified here that has no SFT conversation (the pipeline ran "
        "with other tolerances and did not verify it).",
    )

    def for_row(self, recorded: dict[str, Any] | None) -> MatchOptions:
        """The tolerances for one row: these options over the ones the row records."""
        base = MatchOptions.model_validate(
            {k: v for k, v in (recorded or {}).items() if k in MatchOptions.model_fields}
        )
        mine = {k: v for k, v in self.model_dump().items() if v is not None}
        return base.model_copy(update={k: v for k, v in mine.items() if k in base.model_fields})
