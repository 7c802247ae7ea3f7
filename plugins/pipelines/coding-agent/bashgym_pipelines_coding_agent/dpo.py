"""coding-agent-dpo: each task solved twice (two temperatures or two models), both judged; the
better-scored solution is `chosen`, and the pair is kept only when the scores differ by at
least `min_margin`.

The choice and the margin live in the DataDesigner config, not in pandas: expression columns
total each judge verdict, pick chosen/rejected and compute the margin, and the `bashgym-filter`
processor drops ties, small margins and chosen solutions whose Python fails ruff, recording
each dropped pair with its reason. The exported config therefore reproduces the dataset.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, ClassVar

import data_designer.config as dd
from bashgym_designer.filters import FilterRule, add_filter
from bashgym_designer.rubrics import get_rubric, judge_column, total_score_expr

from bashgym.contracts import Pipeline, RunContext
from bashgym_pipelines_coding_agent import columns, seeds
from bashgym_pipelines_coding_agent.dpo_options import DpoOptions
from bashgym_pipelines_coding_agent.dpo_reshape import dpo_rows
from bashgym_pipelines_coding_agent.trajectory import either_python_file_template

if TYPE_CHECKING:
    import pandas as pd
    from data_designer.config import DataDesignerConfigBuilder

NAME = "coding-agent-dpo"
RUBRIC = "coding-solution"
SIDES = ("a", "b")
A_WINS = "score_a > score_b"  # a tie picks b, but ties never survive the filter


def margin_rules(options: DpoOptions) -> list[FilterRule]:
    """Ties first (their own reason), then the margin, then the optional floor."""
    rules = [
        FilterRule(keep="{{ score_a != score_b }}", reason="dpo: tied scores (no preference)"),
        FilterRule(
            keep=f"{{{{ score_margin >= {options.min_margin} }}}}",
            reason=f"dpo: score margin below {options.min_margin}",
        ),
    ]
    if options.min_chosen_score is not None:
        rules.append(
            FilterRule(
                keep=f"{{{{ chosen_score >= {options.min_chosen_score} }}}}",
                reason=f"dpo: chosen score below {options.min_chosen_score}",
            )
        )
    return rules


def _pick(a: str, b: str) -> str:
    """Jinja picking column `a` when solution A wins, else `b`."""
    return f"{{{{ {a} if {A_WINS} else {b} }}}}"


class CodingAgentDpo(Pipeline[DpoOptions]):
    """Two judged solutions per coding task; kept as a DPO pair when the scores differ enough."""

    runner = "datadesigner"

    output_format: ClassVar[str] = "dpo"
    needs_seed: ClassVar[bool] = False

    def build(
        self, options: DpoOptions, run: RunContext, seed: pd.DataFrame | None
    ) -> DataDesignerConfigBuilder:
        rubric = get_rubric(RUBRIC)
        solvers = {
            "solution_a": (options.model, options.temperature),
            "solution_b": (options.model_b or options.model, options.temperature_b),
        }
        builder, alias = columns.task_builder(options, run, seed, NAME, solvers)
        for side in SIDES:
            text = columns.add_solution_columns(
                builder, f"solution_{side}", alias[f"solution_{side}"], options.max_steps
            )
            builder.add_column(
                judge_column(
                    f"judge_{side}",
                    rubric,
                    model_alias=alias["judge"],
                    prompt_column=columns.TASK_COLUMN,
                    response_column=text,
                )
            )
            builder.add_column(
                dd.ExpressionColumnConfig(
                    name=f"score_{side}",
                    expr=total_score_expr(f"judge_{side}", rubric),
                    dtype="int",
                )
            )
        picks = {
            "chosen_side": ("'a'", "'b'"),
            "chosen": ("solution_a_text", "solution_b_text"),
            "rejected": ("solution_b_text", "solution_a_text"),
        }
        for name, (a, b) in picks.items():
            builder.add_column(dd.ExpressionColumnConfig(name=name, expr=_pick(a, b)))
        for name, (a, b) in {
            "chosen_score": ("score_a", "score_b"),
            "rejected_score": ("score_b", "score_a"),
        }.items():
            builder.add_column(dd.ExpressionColumnConfig(name=name, expr=_pick(a, b), dtype="int"))
        builder.add_column(
            dd.ExpressionColumnConfig(
                name="score_margin", expr="{{ chosen_score - rejected_score }}", dtype="int"
            )
        )
        checks = columns.add_python_checks(
            builder,
            partial(either_python_file_template, A_WINS, "solution_a", "solution_b"),
            "chosen",
            options.lint_python_files,
        )
        add_filter(builder, NAME, margin_rules(options) + columns.python_rules(checks))
        return builder

    def finalize(self, dataset: pd.DataFrame, options: DpoOptions, run: RunContext) -> pd.DataFrame:
        return dpo_rows(dataset, options, get_rubric(RUBRIC))

    def example_seed(self, options: DpoOptions) -> pd.DataFrame:
        return seeds.example_seed()
