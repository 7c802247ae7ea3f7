"""A job directory: the spec and plan of one orchestration, and the run that carries it out.

    JOB/spec.json     the spec as planned (repository made absolute)
    JOB/plan.json     the task DAG; editable by hand, validated again when used
    JOB/name          the job's name in its branches, unique in the repository
    JOB/planning.json what planning cost (requests, tokens, USD), charged to the job's run
    JOB/job.json      the job's result: merged / conflicted / failed / blocked, verify, cost
    JOB/worktrees/    one git worktree per task (and `integration`), removed at the end
                      except those of failed or conflicted tasks
    JOB/cancel        written by `orchestrate cancel`; the running job stops when it sees it

The job dir is also the run directory of the kernel's engine (run.toml, events.jsonl, the run
store state.db, run.json, the sinks' files): the job is a run whose source is the orchestrator,
so its store, events and sinks are the one truth every command reads.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError
from bashgym_orchestrator.plan import Plan, read_plan, write_plan
from bashgym_orchestrator.spec import Spec

SPEC_FILE, PLAN_FILE, RESULT_FILE, CANCEL_FILE = "spec.json", "plan.json", "job.json", "cancel"
WORKTREES, NAME_FILE, PLANNING_FILE = "worktrees", "name", "planning.json"


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:32].strip("-") or "job"


@dataclass(frozen=True)
class Job:
    """One job directory (see the module docstring)."""

    dir: Path

    @classmethod
    def new(cls, runs_dir: Path, spec: Spec) -> Job:
        """A new job folder under `runs_dir`, named for the spec and the time (made here)."""
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        runs_dir.mkdir(parents=True, exist_ok=True)
        for n in range(1, 1000):
            folder = runs_dir / (f"{_slug(spec.title)}-{stamp}" + ("" if n == 1 else f"-{n}"))
            try:
                folder.mkdir()
                return cls(folder.absolute())
            except FileExistsError:
                continue
        raise InputError(f"cannot make a job folder under {runs_dir}")

    @classmethod
    def at(cls, path: Path | str) -> Job:
        """The job in `path` (InputError when it holds no plan)."""
        folder = Path(path).expanduser().absolute()
        if not (folder / PLAN_FILE).is_file():
            raise InputError(
                f"{folder} is not a job directory (no {PLAN_FILE}); make one with "
                "`bashgym orchestrate plan SPEC`"
            )
        return cls(folder)

    @property
    def name(self) -> str:
        """The job's name in branch names (`bashgym/<name>/<task>`): chosen when it was planned
        so that no other job's branches in the repository share it (NAME_FILE), else the
        folder's name."""
        try:
            return (self.dir / NAME_FILE).read_text(encoding="utf-8").strip() or self.dir.name
        except OSError:
            return self.dir.name

    def set_name(self, name: str) -> None:
        (self.dir / NAME_FILE).write_text(name + "\n", encoding="utf-8")

    @property
    def plan_file(self) -> Path:
        return self.dir / PLAN_FILE

    @property
    def result_file(self) -> Path:
        return self.dir / RESULT_FILE

    @property
    def cancel_file(self) -> Path:
        return self.dir / CANCEL_FILE

    @property
    def worktrees(self) -> Path:
        return self.dir / WORKTREES

    def spec(self) -> Spec:
        try:
            return Spec.model_validate_json((self.dir / SPEC_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(
                f"{self.dir / SPEC_FILE}: cannot read the job's spec ({exc})"
            ) from None

    def save_spec(self, spec: Spec) -> None:
        write_json(self.dir / SPEC_FILE, spec.model_dump(mode="json", by_alias=True))

    def plan(self) -> Plan:
        """The plan, validated again (plan.json may have been edited by hand)."""
        return read_plan(self.plan_file, cap_usd=self.spec().budget_usd)

    def save_plan(self, plan: Plan) -> None:
        write_plan(plan, self.plan_file)

    def save_planning(self, spend: Any) -> None:
        """What planning cost (`planning.Spend`)."""
        write_json(self.dir / PLANNING_FILE, spend.as_json())

    def planning(self) -> Any:
        """What planning cost (`planning.Spend`), or None (a plan made by hand, or before
        planning was recorded)."""
        from bashgym_orchestrator.planning import Spend

        try:
            data = json.loads((self.dir / PLANNING_FILE).read_text(encoding="utf-8"))
            return Spend.from_json(data)
        except (OSError, ValueError, TypeError):
            return None

    def result(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.result_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def write_json(path: Path, data: Any) -> None:
    """`data` as indented JSON, atomically (a reader in another terminal never sees half)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
