"""What a registered object must look like, per kind, and the RunContext handed to it.

Each kind is a small abstract base class. Plugin authors subclass it, set `Options` to a pydantic
model of what a user may write (`--set source.path=...`) and implement one method. Options models
are plain config, kept apart from the code that acts on them (the DataDesigner style): the engine
validates every option before any work starts.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections import Counter
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from bashgym.records import Task, Usage, WorkerResult

if TYPE_CHECKING:  # keep `import bashgym` light: pandas and DataDesigner load only when used
    import pandas as pd
    from data_designer.config import DataDesignerConfigBuilder

    from bashgym.models import ModelSession
    from bashgym.settings import ModelAlias, Settings

KINDS = ("sources", "pipelines", "judges", "executors", "routers", "runtimes", "sinks")
ROLES = {"source": "sources", "pipeline": "pipelines", "judge": "judges", "sink": "sinks"}


class InputError(ValueError):
    """Raise for bad user input (a missing file, a wrong column): the CLI prints the message as
    one line and exits 2, with no traceback; run.json records it as the failure."""


class Options(BaseModel):
    """Base for plugin options: unknown keys are an error, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid")


class NoOptions(Options):
    """For plugins that take no options."""


class PipelineOptions(Options):
    num_records: int | None = Field(
        default=None, ge=1, description="Rows to generate; default: one per seed row, else 10."
    )


@dataclass
class RunContext:
    """One run's shared state: where it writes, its settings, and the counters for run.json.

    Plugins report what they drop with `drop(reason)`: nothing is ever lost silently.
    """

    run_dir: Path
    settings: Settings
    seed: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    counts: Counter[str] = field(default_factory=Counter)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    notes: list[str] = field(default_factory=list)
    # Model aliases for this run: `run.models.model_config("default")` gives a DataDesigner
    # ModelConfig; embedded aliases start on first use and stop when the session ends.
    models: ModelSession | None = None

    def drop(self, reason: str, n: int = 1) -> None:
        """Count `n` records dropped for `reason` (shown by reason in run.json)."""
        self.dropped[reason] += n

    def count(self, what: str, n: int = 1) -> None:
        """Count anything else worth reporting (e.g. `source.bad_lines`)."""
        self.counts[what] += n

    def add_usage(self, usage: Usage, cost_usd: float | None = None) -> None:
        self.usage = self.usage + usage
        self.cost_usd += cost_usd or 0.0


class _Component(ABC):  # noqa: B024 -- abstract methods live on each kind
    """Shared by every kind: options model and a one-line description for listings."""

    Options: ClassVar[type[BaseModel]] = NoOptions
    description: ClassVar[str] = ""

    @classmethod
    def summary(cls) -> str:
        return cls.description or (inspect.getdoc(cls) or "").split("\n", 1)[0]


class Source(_Component):
    """Reads inputs into seed rows (a DataFrame) or a stream of records/Traces."""

    output_format: ClassVar[str] = "rows"  # "traces" when it yields Traces

    @abstractmethod
    def open(self, options: Any, run: RunContext) -> Any:
        """Return a DataFrame or an iterable of mappings / Traces / pydantic models."""


class Pipeline(_Component):
    """Builds a DataDesigner config; `output_format` names the training shape of its rows."""

    Options: ClassVar[type[BaseModel]] = PipelineOptions
    output_format: ClassVar[str] = "rows"
    needs_seed: ClassVar[bool] = False

    @abstractmethod
    def build(
        self, options: Any, run: RunContext, seed: pd.DataFrame | None
    ) -> DataDesignerConfigBuilder:
        """Return the builder; the engine attaches `seed` (if any) when the builder has none."""

    def finalize(self, dataset: pd.DataFrame, options: Any, run: RunContext) -> pd.DataFrame:
        """Reshape generated rows into the output format (default: unchanged)."""
        return dataset

    def example_seed(self, options: Any) -> pd.DataFrame | None:
        """A few seed rows shipped with the plugin, used by `bashgym preview` / `validate` when
        no source is given. Pipelines that set `needs_seed` should return one; default: none."""
        return None


class Judge(_Component):
    """Scores rows (columns on the builder) and/or keeps or drops finished rows, with a reason."""

    def configure(self, builder: DataDesignerConfigBuilder, options: Any, run: RunContext) -> None:
        """Add judge/validation columns to a pipeline's builder (default: none)."""

    def verdicts(self, dataset: pd.DataFrame, options: Any, run: RunContext) -> pd.Series:
        """Per row: None to keep, or the reason it is dropped (default: keep all)."""
        import pandas as pd

        return pd.Series([None] * len(dataset), index=dataset.index, dtype=object)


class Sink(_Component):
    """Writes a finished dataset and returns the paths it wrote."""

    @abstractmethod
    def write(
        self, dataset: pd.DataFrame, options: Any, run: RunContext, output_format: str
    ) -> list[Path]:
        """Write `dataset` (rows in `output_format`) under `run.run_dir` or where options say."""


class Executor(_Component):
    """Runs one Task in its working directory, within its limits, and returns the trace."""

    @abstractmethod
    def execute(self, task: Task, options: Any) -> WorkerResult:
        """Do the task; never raise for a failed task: report it in the WorkerResult."""


class Router(_Component):
    """Picks which executor should run a Task (e.g. a cheap student or a strong teacher)."""

    @abstractmethod
    def route(self, task: Task, options: Any) -> str:
        """Return the registered name of the executor for `task`."""


@dataclass(frozen=True)
class ServedModel:
    """A model a Runtime is serving: an OpenAI-compatible base URL (ending in /v1) and the id."""

    base_url: str
    model: str


class Runtime(_Component):
    """Serves a local model provider for as long as a run (or a command) needs it."""

    @abstractmethod
    def serve(self, alias: ModelAlias, settings: Settings) -> AbstractContextManager[ServedModel]:
        """Start serving `alias` (wait until it answers); stop it, children too, on exit."""


BASES: dict[str, type[_Component]] = {
    "sources": Source,
    "pipelines": Pipeline,
    "judges": Judge,
    "executors": Executor,
    "routers": Router,
    "runtimes": Runtime,
    "sinks": Sink,
}
