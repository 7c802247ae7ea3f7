"""The executor step of a run: every task through the run store, `concurrency` at once.

Tasks are added to the store's `tasks` namespace, so a resumed run keeps the ones that
finished and runs only the rest; each runs through `run_task` (deadline, budget
and crashes become statuses) in a fresh workspace inside the run's environment. Each row is
scrubbed before the store keeps it: the store is a file in the run dir.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bashgym.contracts import Budget, RunContext, TaskContext
from bashgym.events import RowsGenerated
from bashgym.records import Task, trace_to_row
from bashgym_work_tasks.running import run_task, work_through
from bashgym_work_tasks.tasks import tasks_from_rows
from bashgym_work_tasks.workspaces import changed_files, prepare_workspace

if TYPE_CHECKING:
    import pandas as pd

    from bashgym.runspec import ResolvedRun
    from bashgym.store import Item

NAMESPACE = "tasks"


@dataclass
class AgentRuns:
    resolved: ResolvedRun
    run: RunContext
    _noted: set[str] = field(default_factory=set)

    def run_all(self, rows: pd.DataFrame) -> pd.DataFrame:
        """One trace row per task (those finished by an earlier attempt included); a failed
        task's row is counted as dropped by the executor, with its error."""
        import pandas as pd

        spec, run = self.resolved.spec, self.run
        tasks = tasks_from_rows(rows if spec.num_records is None else rows.head(spec.num_records))
        store = run.store
        store.add(NAMESPACE, [(t.id, t.model_dump(mode="json")) for t in tasks])
        budget = Budget(spec.budget_usd)
        run.emit(
            RowsGenerated(
                step="executor", n=store.counts(NAMESPACE).get("done", 0), total=len(tasks)
            )
        )

        async def one(item: Item) -> dict[str, Any]:
            return await self.run_one(Task.model_validate(item.payload), budget)

        asyncio.run(work_through(store, NAMESPACE, one, concurrency=spec.concurrency))
        name = self.resolved.executor.name  # type: ignore[union-attr]
        for item in store.items(NAMESPACE, "failed"):
            run.drop(item.error or "failed", by=f"executor {name}", row_id=item.key)
        done = [item.result for item in store.items(NAMESPACE, "done")]
        run.count("tasks", len(done))
        return pd.DataFrame(done)

    async def run_one(self, task: Task, budget: Budget) -> dict[str, Any]:
        import pandas as pd

        step, env = self.resolved.executor, self.resolved.environment
        assert step is not None and env is not None, "resolve() pairs an executor with an env"
        spec = self.resolved.spec
        workspace = self.run.run_dir / "workspaces" / task.id
        await prepare_workspace(workspace, spec.workspace)
        timeout = spec.task_timeout_s or task.timeout_s
        deadline = time.monotonic() + timeout if timeout else None
        async with env.obj.open(workspace, env.options) as session:
            for note in getattr(session, "notes", []):  # a session not built on the base
                if note not in self._noted:  # once a run, not once a task
                    self._noted.add(note)
                    self.run.note(f"environment {env.name}: {note}")
            ctx = TaskContext(
                run=self.run,
                env=session,
                budget=Budget(task.max_budget_usd, parent=budget),
                deadline=deadline,
            )
            result = await run_task(step.obj, step.name, task, step.options, ctx)
        files = await changed_files(workspace)
        keep = spec.workspace.keep
        if keep == "all" or (keep == "failed" and not result.success):
            result = result.model_copy(update={"workspace": str(workspace)})
        else:
            shutil.rmtree(workspace, ignore_errors=True)
        row = {
            **trace_to_row(result.trace),
            "prompt": task.prompt,
            "status": result.status,
            "reason": result.reason,
            "workspace": result.workspace,
            "workspace_files": files,
        }
        self.run.emit(RowsGenerated(step="executor", n=1))
        # scrubbed before the store, the hooks or any model sees it
        return self.run.scrub_frame(pd.DataFrame([row])).to_dict(orient="records")[0]
