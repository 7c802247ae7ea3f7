"""Which run directory a run writes to, and whether it continues an interrupted one.

Re-running the same command after a crash or a kill should pick up where it stopped, not start
a second run beside the first: DataDesigner checkpoints every finished batch, and a resumed
`create()` keeps those and regenerates only what was in flight (no duplicate, no lost row).
A run is "the same" when its resolved config (run.toml without the output path) and the batch
size hash alike; run.json stores that hash. An explicit `--out DIR` resumes DIR when it holds an
unfinished run of the same config; without `--out`, the newest unfinished run of the same
config under `runs_dir` is resumed. `--fresh` always starts over.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bashgym.runspec import ResolvedRun
    from bashgym.settings import Settings

UNFINISHED = ("running", "failed")


@dataclass(frozen=True)
class Target:
    run_dir: Path
    resume: bool
    previous_status: str | None = None


def config_hash(resolved: ResolvedRun, settings: Settings) -> str:
    """Identity of a run's config: what it generates, not where it writes or how it was asked."""
    from bashgym.engine import resolved_toml

    spec = resolved.spec.model_copy(update={"fresh": False})
    text = resolved_toml(_with_spec(resolved, spec), Path("RUN_DIR"))
    text += f"\nbuffer_size={settings.designer.buffer_size}\n"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _with_spec(resolved: ResolvedRun, spec: Any) -> ResolvedRun:
    from dataclasses import replace

    return replace(resolved, spec=spec)


def _read_status(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _alive(pid: Any) -> bool:
    """True when `pid` is another live process (a run still writing that directory)."""
    if not isinstance(pid, int) or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class RunInUseError(RuntimeError):
    """The run directory belongs to a run that is still going."""


def choose(resolved: ResolvedRun, settings: Settings, digest: str) -> Target:
    """The run dir to use and whether to resume it (see the module docstring)."""
    spec = resolved.spec
    if spec.out is not None:
        run_dir = Path(spec.out)
        status = _read_status(run_dir)
        if status and status.get("status") == "running" and _alive(status.get("pid")):
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
        return Target(run_dir, resumable, status.get("status") if status else None)
    if not spec.fresh:
        for candidate in sorted(settings.runs_dir.glob("*/run.json"), reverse=True):
            status = _read_status(candidate.parent)
            if (
                status
                and status.get("config_hash") == digest
                and status.get("status") in UNFINISHED
                and not _alive(status.get("pid"))
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
