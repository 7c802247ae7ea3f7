"""Which run directory a run writes to, and whether it continues an interrupted one.

Re-running the same command after a crash picks up where it stopped (a runner keeps its finished
batches) instead of starting a second run. A run is "the same" when its resolved config
(run.toml without the output path, plus the settings tables' `resume_keys`) hashes alike and
its source files are unchanged (path, size, mtime); run.json stores both hashes. `--out DIR`
resumes DIR when it holds an unfinished run of the same config (and refuses changed inputs);
without `--out`, the newest such run under `runs_dir` that no live process holds resumes.
`--fresh` starts over. The chosen dir is locked for the run (`bashgym.store.lock_run`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from bashgym.runspec import resolved_toml
from bashgym.store import lock_holder, lock_run

if TYPE_CHECKING:
    from bashgym.runspec import ResolvedRun
    from bashgym.settings import Settings

UNFINISHED = ("running", "failed", "interrupted", "retrying")  # retrying: `orchestrate retry`


@dataclass(frozen=True)
class Target:
    run_dir: Path
    resume: bool
    previous_status: str | None = None
    lock: IO[str] | None = None  # the run dir's lock (`bashgym.store.lock_run`): close it to free


def config_hash(resolved: ResolvedRun, settings: Settings) -> str:
    """Identity of a run's config: what it generates, not where it writes or runs (its backend:
    a run started in this process may resume on a cluster), nor how it was asked."""
    spec = resolved.spec.model_copy(update={"fresh": False, "backend": None})
    text = resolved_toml(replace(resolved, spec=spec, backend=None), Path("RUN_DIR"))
    for name, table in sorted(settings.tables().items()):  # e.g. [designer] buffer_size
        text += "".join(f"\n{name}.{k}={getattr(table, k)!r}" for k in table.resume_keys)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def input_hash(resolved: ResolvedRun | None) -> str:
    """Identity of the source's and the pipeline's input files (path, size, mtime): a run whose
    inputs changed must not pick up where a run on the old inputs stopped."""
    digest = hashlib.sha256()
    steps = [s for s in (resolved.source, resolved.pipeline) if s] if resolved else []
    for path in sorted(p for step in steps for p in step.obj.inputs(step.options)):
        try:
            stat = path.stat()
        except OSError:
            continue
        digest.update(f"{path.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def read_status(run_dir: Path) -> dict[str, Any]:
    """What run.json says ({} when there is none, or it is no JSON object)."""
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class RunInUseError(RuntimeError):
    """The run directory belongs to a run that is still going."""


def choose(
    resolved: ResolvedRun, settings: Settings, digest: str, inputs: str, command: str = ""
) -> Target:
    """The run dir to use, locked, and whether to resume it (see the module docstring); the
    lock file says `command` holds it. A dir whose lock is held is never taken over."""
    spec = resolved.spec
    if spec.out is not None:
        run_dir = Path(spec.out)
        if (lock := lock_run(run_dir, command)) is None:
            raise RunInUseError(
                f"{run_dir} is in use by a running bashgym ({lock_holder(run_dir)}); "
                "wait for it or choose another --out"
            )
        status = read_status(run_dir)
        same = status.get("status") in UNFINISHED and status.get("config_hash") == digest
        if same and not spec.fresh and status.get("input_hash", inputs) != inputs:
            lock.close()
            raise RunInUseError(
                f"{run_dir} holds an unfinished run on other inputs (the source files changed "
                "since); pass --fresh to start over there, or choose another --out"
            )
        return Target(run_dir, same and not spec.fresh, status.get("status"), lock)
    for candidate in [] if spec.fresh else sorted(settings.runs_dir.glob("*/run.json"))[::-1]:
        status = read_status(candidate.parent)
        if (
            status.get("config_hash") == digest
            and status.get("input_hash", inputs) == inputs
            and status.get("status") in UNFINISHED
            and (lock := lock_run(candidate.parent, command)) is not None
        ):
            if (again := read_status(candidate.parent).get("status")) in UNFINISHED:
                return Target(candidate.parent, True, again, lock)
            lock.close()  # it ended between the look and the lock
    run_dir = default_run_dir(resolved, settings)
    return Target(run_dir, False, None, lock_run(run_dir, command))


def leftovers(run_dir: Path, earlier: dict[str, Any]) -> list[Path]:
    """What an earlier run in `run_dir` (its run.json: `earlier`) leaves that a run starting
    over there must not mix with its own: its log and store, and the files its run.json lists as
    outputs and artifacts there (only files inside the dir: a run.json is any folder's to write)."""
    outputs = earlier.get("outputs") if isinstance(earlier.get("outputs"), dict) else {}
    artifacts = earlier.get("artifacts") if isinstance(earlier.get("artifacts"), dict) else {}
    listed = [p for ps in outputs.values() if isinstance(ps, list) for p in ps]
    found = [Path(p).resolve() for p in [*listed, *artifacts.values()] if isinstance(p, str)]
    own = [run_dir / n for n in ("events.jsonl", "state.db", "state.db-wal", "state.db-shm")]
    return own + [p for p in found if p.is_file() and p.is_relative_to(run_dir.resolve())]


def default_run_dir(resolved: ResolvedRun, settings: Settings) -> Path:
    """A new folder under `runs_dir`, made here (atomically: two runs never get the same)."""
    label = (resolved.pipeline or resolved.source).name  # type: ignore[union-attr]
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    n = 1
    while True:
        run_dir = settings.runs_dir / (f"{stamp}-{label}" + (f"-{n}" if n > 1 else ""))
        try:
            run_dir.mkdir()
            return run_dir
        except FileExistsError:  # two runs started in the same second
            n += 1
