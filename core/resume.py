"""Which run directory a run writes to, and whether it continues an interrupted one.

Re-running the same command after a crash or a kill should pick up where it stopped, not start
a second run beside the first: DataDesigner checkpoints every finished batch, and a resumed
`create()` keeps those and regenerates only what was in flight (no duplicate, no lost row).
A run is "the same" when its resolved config (run.toml without the output path) and the batch
size hash alike, and its source files are unchanged (path, size, mtime); run.json stores both
hashes. An unfinished run on changed inputs is never resumed: `--out` refuses, else a new run
starts. An explicit `--out DIR` resumes DIR when it holds an
unfinished run of the same config; without `--out`, the newest unfinished run of the same
config under `runs_dir` is resumed. `--fresh` always starts over.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bashgym.runspec import resolved_toml
from bashgym.store import owner_alive, owner_token

if TYPE_CHECKING:
    from bashgym.runspec import ResolvedRun
    from bashgym.settings import Settings

UNFINISHED = ("running", "failed", "interrupted")


@dataclass(frozen=True)
class Target:
    run_dir: Path
    resume: bool
    previous_status: str | None = None


def config_hash(resolved: ResolvedRun, settings: Settings) -> str:
    """Identity of a run's config: what it generates, not where it writes or how it was asked."""
    spec = resolved.spec.model_copy(update={"fresh": False})
    text = resolved_toml(replace(resolved, spec=spec), Path("RUN_DIR"))
    text += f"\nbuffer_size={settings.designer.buffer_size}\n"
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


def _read_status(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _alive(status: dict[str, Any]) -> bool:
    """True when the run that wrote `status` is still going (another live process)."""
    owner = status.get("owner")
    return owner != owner_token() and owner_alive(owner)


class RunInUseError(RuntimeError):
    """The run directory belongs to a run that is still going."""


def choose(resolved: ResolvedRun, settings: Settings, digest: str, inputs: str) -> Target:
    """The run dir to use and whether to resume it (see the module docstring)."""
    spec = resolved.spec
    if spec.out is not None:
        run_dir = Path(spec.out)
        status = _read_status(run_dir)
        if status and status.get("status") == "running" and _alive(status):
            raise RunInUseError(
                f"{run_dir} is in use by a running bashgym (pid {status.get('pid')}); "
                "wait for it or choose another --out"
            )
        resumable = (
            not spec.fresh
            and status is not None
            and status.get("status") in UNFINISHED
            and status.get("config_hash") == digest
        )
        if resumable and status.get("input_hash", inputs) != inputs:
            raise RunInUseError(
                f"{run_dir} holds an unfinished run on other inputs (the source files changed "
                "since); pass --fresh to start over there, or choose another --out"
            )
        return Target(run_dir, resumable, status.get("status") if status else None)
    if not spec.fresh:
        for candidate in sorted(settings.runs_dir.glob("*/run.json"), reverse=True):
            status = _read_status(candidate.parent)
            if (
                status
                and status.get("config_hash") == digest
                and status.get("input_hash", inputs) == inputs
                and status.get("status") in UNFINISHED
                and not _alive(status)
            ):
                return Target(candidate.parent, True, status.get("status"))
    return Target(default_run_dir(resolved, settings), False)


def default_run_dir(resolved: ResolvedRun, settings: Settings) -> Path:
    label = (resolved.pipeline or resolved.source).name  # type: ignore[union-attr]
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = settings.runs_dir / f"{stamp}-{label}"
    n = 2
    while run_dir.exists():  # two runs started in the same second
        run_dir = settings.runs_dir / f"{stamp}-{label}-{n}"
        n += 1
    return run_dir
