"""A plan shown for approval: every task with its priority, dependencies, turns and budget; the
critical path; the total budget against the cap; the tasks that expect to touch the same files
(a conflict when neither starts from the other's work); any problem a hand edit introduced.

On a terminal it is a rich table; otherwise plain lines (a column layout, no colour or box
characters), so a log or a pipe reads the same facts.
"""

from __future__ import annotations

import sys
from typing import IO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bashgym_orchestrator.plan import (
    Plan,
    critical_path,
    depends_transitively,
    file_overlaps,
    validate_plan,
)

PRIORITY_STYLE = {"critical": "bold red", "high": "yellow", "normal": "", "low": "dim"}


def summary_lines(plan: Plan, *, cap_usd: float | None = None) -> list[str]:
    """What follows the table: critical path, total budget, shared files, problems."""
    turns = {task.id: task.estimated_turns for task in plan.tasks}
    path = critical_path(plan)
    lines = [
        f"Critical path: {' -> '.join(path) or '-'} ({sum(turns[t] for t in path)} estimated turns)"
    ]
    cap = "" if cap_usd is None else f" of a ${cap_usd:g} cap"
    lines.append(f"Total budget: ${plan.total_budget_usd:.2f}{cap}")
    overlaps = file_overlaps(plan)
    if overlaps:
        lines.append("Tasks that expect to touch the same files:")
        for first, second, paths in overlaps:
            if depends_transitively(plan, second, first):
                how = f"{second} starts from {first}'s work"
            elif depends_transitively(plan, first, second):
                how = f"{first} starts from {second}'s work"
            else:
                how = "may conflict: they run side by side"
            lines.append(f"  {first} & {second}: {', '.join(paths)} ({how})")
    problems = validate_plan(plan, cap_usd)
    if problems:
        lines.append("Problems (the plan cannot run until they are fixed):")
        lines += [f"  - {problem}" for problem in problems]
    return lines


def plan_text(plan: Plan, *, cap_usd: float | None = None) -> str:
    """The plan as plain text: a header, one line per task, then the summary."""
    header = ("id", "priority", "depends on", "turns", "budget", "title")
    rows = [
        (
            task.id,
            task.priority,
            ", ".join(task.depends_on) or "-",
            str(task.estimated_turns),
            f"${task.budget_usd:.2f}",
            task.title,
        )
        for task in plan.tasks
    ]
    widths = [max(len(row[col]) for row in [header, *rows]) for col in range(len(header) - 1)]
    lines = [
        f"Plan: {plan.title} ({len(plan.tasks)} tasks; planner {plan.planner}; "
        f"{'approved' if plan.approved else 'not approved'})"
    ]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  " + "  ".join([*cells, row[-1]]).rstrip())
    lines += summary_lines(plan, cap_usd=cap_usd)
    return "\n".join(lines) + "\n"


def plan_table(plan: Plan) -> Table:
    """The tasks as a rich table; every cell is plain text (a `[x]` in a title is not markup)."""
    table = Table(
        title=Text(f"{plan.title} — {len(plan.tasks)} tasks, planned by {plan.planner}"),
        title_justify="left",
    )
    table.add_column("id", style="bold", no_wrap=True)
    table.add_column("priority", no_wrap=True)
    table.add_column("depends on")
    table.add_column("turns", justify="right")
    table.add_column("budget", justify="right")
    table.add_column("title")
    for task in plan.tasks:
        table.add_row(
            Text(task.id),
            Text(task.priority, style=PRIORITY_STYLE.get(task.priority, "")),
            Text(", ".join(task.depends_on) or "-"),
            str(task.estimated_turns),
            f"${task.budget_usd:.2f}",
            Text(task.title),
        )
    return table


def show(
    plan: Plan,
    *,
    cap_usd: float | None = None,
    console: Console | None = None,
    file: IO[str] | None = None,
) -> None:
    """Print `plan` for approval: a rich table on a terminal, `plan_text` otherwise."""
    console = console or Console(file=file or sys.stdout)
    if not console.is_terminal:
        console.file.write(plan_text(plan, cap_usd=cap_usd))
        console.file.flush()
        return
    console.print(plan_table(plan))
    for line in summary_lines(plan, cap_usd=cap_usd):
        console.print(Text(line))
    console.print(
        Text("Not approved yet: nothing runs until it is." if not plan.approved else "Approved.")
    )
