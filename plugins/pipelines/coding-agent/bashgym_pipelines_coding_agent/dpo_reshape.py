"""Kept pairs → DPO rows: `prompt`, `chosen`, `rejected`, their scores, and metadata.

`prompt`, `chosen` and `rejected` are plain text (the task and the two rendered trajectories),
which the nemo-jsonl sink writes as TRL / NeMo-RL pairs as-is; `system_prompt` carries the agent
prompt for the conversational formats. Per-criterion scores of both sides, which side won and
what produced each side (model alias and temperature) stay as columns for auditing.
"""

from __future__ import annotations

import pandas as pd
from bashgym_designer.rubrics import Rubric

from bashgym_pipelines_coding_agent import columns, prompts, reshape
from bashgym_pipelines_coding_agent.dpo_options import DpoOptions

PAIR_COLUMNS = ["prompt", "chosen", "rejected", "chosen_score", "rejected_score"]


def side_labels(options: DpoOptions) -> dict[str, str]:
    """What produced each side, e.g. {"a": "default@0.2", "b": "default@1.0"}."""
    return {
        "a": f"{options.model}@{options.temperature:g}",
        "b": f"{options.model_b or options.model}@{options.temperature_b:g}",
    }


def dpo_rows(dataset: pd.DataFrame, options: DpoOptions, rubric: Rubric) -> pd.DataFrame:
    if dataset.empty or "chosen" not in dataset.columns:
        return pd.DataFrame(columns=[*PAIR_COLUMNS, "system_prompt"])
    out = pd.DataFrame(index=dataset.index)
    out["prompt"] = dataset["task_prompt"]
    for column in ("chosen", "rejected"):
        out[column] = dataset[column]
    for column in ("chosen_score", "rejected_score", "score_margin"):
        out[column] = dataset[column].astype(int)
    out["system_prompt"] = options.system_prompt or prompts.AGENT_SYSTEM_PROMPT
    for column in reshape.present(dataset, reshape.ID_COLUMNS):
        out[column] = dataset[column]
    for column in reshape.present(dataset, options.samplers()):
        out[column] = dataset[column]
    labels = side_labels(options)
    sides = dataset["chosen_side"]
    out["chosen_from"] = [labels[s] for s in sides]
    out["rejected_from"] = [labels["b" if s == "a" else "a"] for s in sides]
    for role, pick in (("chosen", sides), ("rejected", sides.map({"a": "b", "b": "a"}))):
        verdicts = pd.Series(
            [dataset.at[i, f"judge_{side}"] for i, side in pick.items()], index=dataset.index
        )
        out = out.join(reshape.score_columns(verdicts, rubric, f"{role}_score", total=False))
        out[f"{role}_trajectory"] = [
            reshape.as_json(dataset.at[i, f"solution_{side}"]) for i, side in pick.items()
        ]
    checks = columns.python_checks("chosen", options.lint_python_files)
    out["chosen_ruff_score"] = reshape.lint_score(dataset, checks)
    return out.reset_index(drop=True)
