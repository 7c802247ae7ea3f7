"""What a registered object must look like, per kind, and the contexts handed to it.

Each kind is a small abstract base class, generic in its options model: `class Files(Source[
FilesOptions])` is how a plugin declares its options (the one way), and types `options` for its
author. Options are plain config, validated by the engine before any work starts."""

from __future__ import annotations

import glob
import inspect
import os
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field

from bashgym.events import Counted, Event, Note, RowDropped, Tally, UsageCharged
from bashgym.records import Completed, DroppedRow, Task, Usage, WorkerResult
from bashgym.store import RunStore

if TYPE_CHECKING:  # keep `import bashgym` light: pandas loads only when used
    import pandas as pd

    from bashgym.events import EventBus
    from bashgym.registry import Registry
    from bashgym.runspec import ResolvedRun, Step
    from bashgym.settings import ModelAlias, Settings

# a run's roles and the kind each is registered as (`--source files` names a source)
ROLES = {r: f"{r}s" for r in ("source", "executor", "router", "environment", "pipeline", "judge",
                              "sink", "backend")}  # fmt: skip


class InputError(ValueError):
    """Raise for bad user input (a missing file, a wrong column): the CLI prints the message as
    one line and exits 2, with no traceback; run.json records it as the failure."""


class RunStopped(RuntimeError):
    """Raise when a run cannot go on for a cause outside it (its model stopped answering): the
    CLI prints one line and exits 1; the run is `failed`, so the same command resumes it."""


class Options(BaseModel):
    """Base for plugin options: an unknown key is an error, so a typo never passes silently;
    `inf` and `nan` too (a limit left out is no limit)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NoOptions(Options):
    """For plugins that take no options."""


class PipelineOptions(Options):
    num_records: int | None = Field(
        None, ge=1, le=10**9, description="Rows to generate; default: one per seed row, else 10."
    )


O = TypeVar("O", bound=BaseModel)  # noqa: E741 -- the options type, as in Generic[O]


@dataclass
class RunContext:
    """One run's shared state: where it writes, its settings, models, registry, store, events.
    Every count goes through `emit` (or `drop`, `count`, `note`, `charge`), which events.jsonl,
    run.json, the display and `on_event` follow; `counts`, `dropped`, ... read the tally."""

    run_dir: Path
    settings: Settings
    seed: int = 0
    models: Models | None = None
    bus: EventBus | None = None
    tally: Tally = field(default_factory=Tally)
    registry: Registry | None = None  # every plugin object of this run, by kind and name
    scrubbing: Scrubbing | None = None
    _store: RunStore | None = field(default=None, repr=False)

    def redact(self, text: str) -> str:
        """`text` with secrets redacted, as the run's rows are (for files a plugin writes)."""
        return self.scrubbing.text(text) if self.scrubbing and self.scrubbing.enabled else text

    def scrub_frame(self, frame: pd.DataFrame) -> pd.DataFrame:
        return self.scrubbing.frame(frame) if self.scrubbing else frame

    def emit(self, event: Event) -> None:
        if self.bus is not None:
            self.bus.emit(event)
        else:  # a context built by hand (tests, a plugin's own tool): keep the tally anyway
            self.tally(event)

    def drop(self, reason: str, n: int = 1, *, by: str = "", row_id: str | None = None) -> None:
        """Count `n` records dropped for `reason` (run.json shows them by reason)."""
        self.emit(RowDropped(by=by, reason=reason, n=n, row_id=row_id))

    def count(self, what: str, n: int = 1) -> None:
        """Count anything else worth reporting (e.g. `source.bad_lines`)."""
        self.emit(Counted(what=what, n=n))

    def note(self, text: str) -> None:
        self.emit(Note(text=text))

    def model(self, alias: str) -> Model:
        """The model behind `alias` (started on first use); each answer is charged to the run."""
        assert self.models is not None, "the engine opens a model session for every run"
        return Charged(self.models.resolve(alias), self.charge)  # type: ignore[return-value]

    def charge(
        self, usage: Usage, cost_usd: float | None, *, model: str, alias: str | None = None
    ) -> None:
        """Record tokens and cost spent on `model` (through `alias`)."""
        self.emit(UsageCharged.of(usage, cost_usd, model=model, alias=alias))

    @property
    def store(self) -> RunStore:
        """The run's work-item store (`state.db`), opened on first use."""
        if self._store is None:
            self._store = RunStore(self.run_dir / "state.db")
        return self._store

    @property
    def counts(self) -> Counter[str]:
        return self.tally.counts

    @property
    def dropped(self) -> Counter[str]:
        return self.tally.dropped

    @property
    def notes(self) -> tuple[str, ...]:
        """A copy: a note is added with `note()`, which logs it as an event too."""
        return tuple(self.tally.notes)

    @property
    def usage(self) -> Usage:
        return self.tally.usage

    @property
    def cost_usd(self) -> float:
        return self.tally.cost_usd


class ModelCallError(RuntimeError):
    """A model call that failed for good; `str()` is one line: the alias, the cause, the tries.
    `transient`: rate-limited, unreachable or a 5xx (the same call may answer later)."""

    def __init__(self, reason: str, *, tries: int = 1, transient: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.tries, self.transient = reason, tries, transient


@dataclass
class Completion:
    """One answer: the assistant message as OpenAI shapes it (`role`, `content`, `tool_calls`),
    its tokens and their cost (None: no known price), the model that answered, why it stopped."""

    message: dict[str, Any]
    usage: Usage
    cost_usd: float | None
    model: str
    finish_reason: str | None = None


class Model(Protocol):
    """One alias resolved: where it answers (a local runtime already started) and how to call it.
    Plugins call `acomplete`; one that drives its own client (a runner's) reads the fields."""

    alias: str
    provider: str  # a settings `Provider`: openai, anthropic, openai-compatible, embedded, ...
    model: str  # the model id at the endpoint
    endpoint: str  # base URL
    api_key_env: str | None  # the NAME of the env var holding its key, never the key
    params: Mapping[str, Any]  # the alias's inference params
    served: bool  # served on this machine by a runtime (its cost is the machine's)

    async def acomplete(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None, params: dict[str, Any] | None = None,
        retries: int | None = None, remaining_s: Callable[[], float | None] | None = None,
        on_failure: Callable[[BaseException], None] | None = None,
    ) -> Completion:  # fmt: skip
        """One answer, `params` over the alias's, retried on transient failures (at most
        `retries` times, never past `remaining_s()`); raises ModelCallError saying why.
        `on_failure` sees each failed try. Charging is the caller's context's job."""

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """USD for these tokens (0 when served here; None when the price is unknown)."""


class Models(Protocol):
    """A run's model session (`open_models`): aliases resolved to `Model`s, local runtimes started
    on first use, stopped on close. Call through `run.model()`/`task.model()`: they charge."""

    settings: Settings

    def resolve(self, alias: str) -> Model: ...
    def close(self) -> None: ...
    def __enter__(self) -> Models: ...
    def __exit__(self, *exc: object) -> None: ...


@dataclass
class Charged:
    """A `Model` whose answers are charged where it was asked for: the run, or a task and its
    budget (BudgetExceeded past the cap, after the answer is counted)."""

    inner: Model
    charge: Callable[..., None]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def acomplete(self, messages: list[dict[str, Any]], **call: Any) -> Completion:
        done = await self.inner.acomplete(messages, **call)
        self.charge(done.usage, done.cost_usd, model=done.model, alias=self.inner.alias)
        return done


def open_models(settings: Settings, registry: Registry, hook: Any, *, serve: bool = True) -> Models:
    """The model session the installed plugins give (InputError naming the fix when none)."""
    models = hook.open_models(settings=settings, registry=registry, serve=serve)
    if models is None:
        raise InputError("no model access is installed: pip install bashgym-models-providers")
    return models  # type: ignore[no-any-return]


class BudgetExceeded(Exception):
    """Raised by `Budget.charge` when spending passes the cap; the task ends as `budget`."""


@dataclass
class Budget:
    """A cost cap in USD (None: none); a task's has the run's as parent: a charge counts against
    both, either cap stops the work, `left_usd` is the least left (an agent CLI's own cap)."""

    cap_usd: float | None = None
    parent: Budget | None = None
    spent_usd: float = 0.0

    def charge(self, cost_usd: float | None) -> None:
        self.spent_usd += cost_usd or 0.0
        if self.parent is not None:
            self.parent.charge(cost_usd)
        if self.cap_usd is not None and self.spent_usd > self.cap_usd:
            raise BudgetExceeded(f"spent ${self.spent_usd:.4f} of a ${self.cap_usd:g} budget")

    @property
    def left_usd(self) -> float | None:
        own = None if self.cap_usd is None else max(self.cap_usd - self.spent_usd, 0.0)
        up = None if self.parent is None else self.parent.left_usd
        return own if up is None else up if own is None else min(own, up)


@dataclass
class TaskContext:
    """What an executor gets for one Task: its workspace, the environment session its commands
    and file edits go through, the run's model aliases, a budget and a deadline."""

    run: RunContext
    env: EnvironmentSession
    budget: Budget = field(default_factory=Budget)
    deadline: float | None = None  # time.monotonic() value; None: no deadline
    task_id: str = ""

    @property
    def workspace(self) -> Path:
        return self.env.workspace.root

    @property
    def models(self) -> Models:
        assert self.run.models is not None, "the engine opens a model session for every run"
        return self.run.models

    def model(self, alias: str) -> Model:
        """The model behind `alias`; each answer is charged to the task and its budget."""
        return Charged(self.models.resolve(alias), self.charge)  # type: ignore[return-value]

    def remaining_s(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)

    def emit(self, event: Event) -> None:
        self.run.emit(event)

    def charge(
        self, usage: Usage, cost_usd: float | None, *, model: str, alias: str | None = None
    ) -> None:
        """Count usage in the run and against the budget (raises BudgetExceeded at the cap)."""
        event = UsageCharged.of(usage, cost_usd, model=model, alias=alias, task_id=self.task_id)
        self.run.emit(event)
        self.budget.charge(cost_usd)


class Component(ABC, Generic[O]):
    """Shared by every kind: the options model and a one-line description for listings."""

    Options: ClassVar[type[BaseModel]] = NoOptions
    description: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "Options" in cls.__dict__ and cls.__module__ != __name__:
            kind = next(b.__name__ for b in cls.__mro__[1:] if b.__module__ == __name__)
            raise TypeError(
                f"{cls.__qualname__}: declare options through the generic base, class "
                f"{cls.__name__}({kind}[{cls.__dict__['Options'].__name__}]) (bashgym-core 0.2 "
                "dropped the `Options = ...` attribute)"
            )
        for base in getattr(cls, "__orig_bases__", ()):
            for arg in get_args(base):
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    cls.Options = arg
                    return

    @classmethod
    def summary(cls) -> str:  # the first paragraph (a sentence may wrap), as one line
        return cls.description or " ".join((inspect.getdoc(cls) or "").split("\n\n", 1)[0].split())

    def inputs(self, options: O) -> list[Path]:
        """Files this step reads, for the run's input fingerprint (a changed input never
        resumes silently). Default: what the options' string values name (file, folder, glob)."""
        found: list[Path] = []
        for value in options.model_dump().values():
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, (str, Path)) and str(item).strip():
                    for hit in map(Path, glob.glob(os.path.expanduser(item), recursive=True)):
                        found += sorted(p for p in hit.rglob("*") if p.is_file()) or [hit]
        return found


class Source(Component[O]):
    """Reads inputs into seed rows (a DataFrame) or a stream of records/Traces."""

    output_format: ClassVar[str] = "rows"  # "traces" when it yields Traces

    @abstractmethod
    def open(self, options: O, run: RunContext) -> Any:
        """Return a DataFrame or an iterable of mappings / Traces / pydantic models."""


class Pipeline(Component[O]):
    """Builds a config that its `runner` (a registered Runner's name, e.g. `datadesigner`)
    generates rows from; `output_format` names the rows' shape."""

    Options: ClassVar[type[BaseModel]] = PipelineOptions
    output_format: ClassVar[str] = "rows"
    needs_seed: ClassVar[bool] = False
    runner: ClassVar[str]  # no default: the kernel knows no runner
    # file suffixes this pipeline runs when `--pipeline` names such a file (option `path`)
    config_files: ClassVar[tuple[str, ...]] = ()
    uses_environments: ClassVar[bool] = False  # runs code in one itself: a run loads them all

    @abstractmethod
    def build(self, options: O, run: RunContext, seed: pd.DataFrame | None) -> Any:
        """Return the config its runner understands (the runner refuses any other kind)."""

    def finalize(
        self, dataset: pd.DataFrame, options: O, run: RunContext
    ) -> pd.DataFrame | Generated:
        """Reshape generated rows into the output format (default: unchanged). A `Generated`
        instead hands back the rows it dropped too, whole, for dropped.jsonl and the report."""
        return dataset

    def example_seed(self, options: O) -> pd.DataFrame | None:
        """A few seed rows shipped with the plugin, for `preview` / `validate` without a
        source. Pipelines that set `needs_seed` should return one; default: none."""
        return None


class Judge(Component[O]):
    """Scores rows (columns on the builder) and/or keeps or drops finished rows, with a reason."""

    runner: ClassVar[str | None] = None  # whose configs `configure` adds columns to

    def configure(self, config: Any, options: O, run: RunContext) -> None:
        """Add judge/validation columns to a pipeline's builder (default: none). A run with such
        a judge and no pipeline sends its rows through the judge's runner one for one."""

    def verdicts(self, dataset: pd.DataFrame, options: O, run: RunContext) -> pd.Series:
        """Per row: None to keep, or the reason it is dropped (default: keep all)."""
        import pandas as pd

        return pd.Series([None] * len(dataset), index=dataset.index, dtype=object)


@dataclass
class Generated:
    """What a runner made of one round (or the engine of all): the rows, every row dropped on
    the way with its content (dropped.jsonl, the report), and run.json extras (`resumed_rows`:
    read back from disk; the run counts as `generated` the rows after the pipeline's finalize)."""

    dataset: pd.DataFrame
    dropped: list[DroppedRow] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)


class Runner(Component[O]):
    """Turns pipelines' configs into rows, a round at a time: builds the round's config (the
    pipeline's `build` on its seed rows, each judge's `configure`), refusing one it does not
    take, generates, and counts each row it loses (`run.drop`) and its usage."""

    @abstractmethod
    def generate(
        self, pipeline: Step | None, judges: list[Step], seed: pd.DataFrame | None, n: int,
        run: RunContext, *, round: int, resume: bool,
    ) -> Generated:  # fmt: skip
        """Round `round` (1, 2, …): `n` rows (`pipeline` None: the seed rows one for one, for
        the judges' columns). Resumable: a round finished on disk is read back."""


@dataclass
class Written:
    """What a sink wrote: its files and the number of rows really in them (a row the sink
    refused is `run.drop`ped with its reason, and not counted here)."""

    paths: list[Path]
    rows: int


class SinkStream:
    """A sink fed its dataset in batches (`Sink.stream`): `add` each, then `close` (what it
    wrote) or `discard` (the run failed: nothing appears). This default keeps the batches and
    hands them to `write` as one frame, for sinks that need every row at once."""

    def __init__(self, write: Callable[[pd.DataFrame], Written]) -> None:
        self._write = write
        self._batches: list[pd.DataFrame] = []

    def add(self, batch: pd.DataFrame) -> None:
        self._batches.append(batch)

    def close(self) -> Written:
        import pandas as pd

        return self._write(pd.concat(self._batches, ignore_index=True))

    def discard(self) -> None:
        self._batches = []


class Sink(Component[O]):
    """Writes a finished dataset; returns what it wrote."""

    @abstractmethod
    def write(
        self, dataset: pd.DataFrame, options: O, run: RunContext, output_format: str
    ) -> Written:
        """Write `dataset` (rows in `output_format`) under `run.run_dir` or where options say."""

    def stream(self, options: O, run: RunContext, output_format: str) -> SinkStream:
        """A writer taking the dataset in batches, so a run from a source straight to its
        sinks holds one batch in memory; override where the format can be written as it comes."""
        return SinkStream(lambda frame: self.write(frame, options, run, output_format))

    def refuses(self, options: O, output_format: str) -> str | None:
        """Why it cannot write rows in `output_format` (asked before the run starts), or None."""
        return None


class Executor(Component[O]):
    """Runs one Task in its workspace, within its limits, and returns the Trace of the work."""

    # True when its process itself talks to a model API from inside the environment (an agent
    # CLI): the run then refuses an environment whose `network` option is off.
    needs_network: ClassVar[bool] = False

    def preflight(self, options: O, run: RunContext) -> None:
        """Before the first task of a run: raise InputError when no task could run (a missing
        binary, a model that does not answer), so the run stops at once with one line."""

    @abstractmethod
    async def run(self, task: Task, options: O, ctx: TaskContext) -> WorkerResult:
        """Do the task. Report failure as a status, never raise for it; stop every process
        you started in `finally` (cancellation is asyncio cancellation)."""


@dataclass(frozen=True)
class Route:
    """A Router's choice for one Task and why (`reason`, e.g. the score against the threshold:
    kept in the task's row and events); `escalate_to` runs it again if it fails its check."""

    executor: str
    reason: str
    score: float | None = None
    escalate_to: str | None = None


class Router(Component[O]):
    """Picks which executor runs each Task (e.g. a cheap student or a strong teacher), and why."""

    def executors(self, options: O) -> list[str]:
        """The executors `options` name (resolve() checks each is installed); default: the
        string options named `executor`, `student` or `teacher`, or ending in `_executor`."""
        named = options.model_dump().items()  # type: ignore[attr-defined]
        keys = ("executor", "student", "teacher")
        return [v for k, v in named
                if isinstance(v, str) and (k in keys or k.endswith("_executor"))]  # fmt: skip

    @abstractmethod
    def route(self, task: Task, options: O, run: RunContext) -> Route:
        """Choose the executor for `task` (in a worker thread: it may block on a probe call)."""


@dataclass(frozen=True)
class Trained:
    """What a Trainer wrote: the adapter a runtime loads, and the figures of the fit."""

    adapter: Path
    metrics: dict[str, Any] = field(default_factory=dict)
    report: Path | None = None


class Trainer(Component[O]):
    """Fine-tunes the student on a run's rows (`bashgym train RUN_DIR --trainer NAME`)."""

    @abstractmethod
    def train(self, run_dir: Path, out_dir: Path, options: O, settings: Settings) -> Trained:
        """Train the student on `run_dir`'s written rows; adapter and report go to `out_dir`."""


@dataclass(frozen=True)
class ServedModel:
    """A model a Runtime is serving: an OpenAI-compatible base URL (ending in /v1) and the id."""

    base_url: str
    model: str


class Runtime(Component[O]):
    """Serves a local model provider for as long as a run (or a command) needs it."""

    @abstractmethod
    def serve(self, alias: ModelAlias, settings: Settings) -> AbstractContextManager[ServedModel]:
        """Start serving `alias` (wait until it answers); stop it, children too, on exit."""


class Backend(Component[O]):
    """Where a run's work runs off this process (e.g. a Ray cluster): each generation round
    (`generate`, instead of the runner's) and each agent task (`call`, from work-tasks). The run
    store, events.jsonl and run.json stay here: what runs elsewhere reports back."""

    def open(
        self, options: O, resolved: ResolvedRun, run: RunContext
    ) -> AbstractContextManager[Any]:
        """Connect (or start a local instance) for `run`; closed when the run ends."""
        return nullcontext()

    @abstractmethod
    def generate(
        self, runner: str, pipeline: Step | None, judges: list[Step], seed: pd.DataFrame | None,
        n: int, run: RunContext, *, round: int, resume: bool, options: O,
    ) -> Generated:  # fmt: skip
        """`Runner.generate` of runner `runner`, made elsewhere (e.g. in shards): the same rows
        in seed order, every count, drop reason and usage emitted on `run`."""

    @abstractmethod
    async def call(self, fn: Callable[..., Any], *args: Any, run: RunContext, options: O) -> Any:
        """`await fn(worker_run, *args)` elsewhere (`fn` module-level, `args` plain data, no
        secret), `worker_run` a RunContext rebuilt there whose events are emitted on `run` here.
        A worker lost mid-call is retried once: `fn` must be safe to repeat; the caller records."""


class PathError(ValueError):
    """A path the agent may not use, or a file operation that cannot be done: one line for it."""


class Files(Protocol):
    """An environment session's file operations on its workspace folder (`root`): every path is
    relative to it; one that leaves it raises PathError (bashgym-sandbox's `Workspace`)."""

    root: Path

    def read(self, path: str, offset: int = 0, limit: int | None = None) -> str: ...
    def write(self, path: str, content: str) -> str: ...
    def edit(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str: ...
    def listing(self, path: str = ".", depth: int = 2) -> str: ...
    def search(self, pattern: str, path: str = ".", glob: str | None = None) -> str: ...


class EnvironmentSession(ABC):
    """One open environment around a workspace: commands run in it, and file operations go
    through `workspace` (which refuses any path that leaves it)."""

    name: ClassVar[str] = ""

    def __init__(self, workspace: Files) -> None:
        self.workspace = workspace
        self.notes: list[str] = []  # what holds less here than asked (e.g. no cgroup)

    def describe(self) -> list[str]:
        """What this session guarantees, one line each (for `sandbox run --explain`, notes)."""
        return []

    @abstractmethod
    async def run(self, command: str, *, timeout: float | None = None) -> Completed:
        """Run a shell command in the workspace; its limits apply; never raises for a failure."""

    @abstractmethod
    def argv(self, argv: Sequence[str]) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run `argv` inside this environment (for long-lived
        workers a caller starts itself with `bashgym_procs`)."""


class Environment(Component[O]):
    """Where an executor's commands and file edits happen (local, bubblewrap, ...)."""

    isolation: ClassVar[int] = 0  # the default environment is the usable one with the most

    @abstractmethod
    def open(self, workspace: Path, options: O) -> AbstractAsyncContextManager[EnvironmentSession]:
        """Open a session on `workspace`; close stops every process it started."""

    def available(self) -> str | None:
        """None when usable here; else why not, in one line (e.g. `bwrap` is not installed)."""
        return None


class Redactor(Protocol):
    """Redacts secrets from strings and frames, counting what it redacted by type."""

    counts: Counter[str]

    def text(self, value: str) -> str: ...  # (JSON text stays JSON: the event bus relies on it)

    def frame(self, dataset: pd.DataFrame) -> tuple[pd.DataFrame, int]: ...


class Scrubbing(Protocol):
    """A run's secret scrubbing (`open_scrubbing`; the default: bashgym-scrubbers-secrets and
    its `[scrub]` table): the engine redacts seed rows before any runner, every row before the
    sinks and event text before events.jsonl, and runs no step without one."""

    enabled: bool

    def frame(self, dataset: pd.DataFrame) -> pd.DataFrame: ...
    def text(self, value: str) -> str: ...  # (JSON text stays JSON: the event bus relies on it)
    def report(self) -> dict[str, Any]: ...


class Scrubber(Component[O]):
    """Finds secrets; the run's `Scrubbing` runs the configured ones (see there)."""

    @abstractmethod
    def redactor(self, allow: Sequence[str]) -> Redactor:
        """A redactor that keeps matches of `allow` (literals, or `re:PATTERN`) as they are."""


# the kinds, each the plural of its base's name ("sources": Source), which its objects subclass
BASES: dict[str, type[Component[Any]]] = {
    f"{base.__name__.lower()}s": base
    for base in (Source, Pipeline, Judge, Executor, Router, Trainer, Runtime, Sink, Environment,
                 Scrubber, Runner, Backend)
}  # fmt: skip
KINDS = tuple(BASES)
