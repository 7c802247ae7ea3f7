"""Tool-use SFT: sampled settings → one structured conversation → checked calls → judged rows.

Columns (all declarative except the call check): samplers `domain`, `scenario`, `difficulty`
and `num_tool_calls`; `conversation` (structured, schema.Conversation); `tool_call_check`, a
DataDesigner validation column that checks every call against the tool set with a JSON Schema
validator; `judge`, the "tool-use" rubric, skipped for rows whose calls are invalid (no judge
call is spent on a row that is dropped anyway). The bashgym-filter processor then drops, with a
reason per kind, rows calling unknown tools, rows whose arguments break a schema, incomplete
conversations and rows scoring below the thresholds; each dropped row is recorded with its
`tool_call_check.errors`.

Why a validation column and not a check in `finalize`: the drop happens inside DataDesigner
where the filter records the whole row and its reason, and the judge can be skipped for it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.filters import FilterRule
from bashgym_designer.rubrics import add_rubric_judge, get_rubric, writer_builder

from bashgym.contracts import Generated, InputError, Pipeline, RunContext
from bashgym.records import DroppedRow
from bashgym.text import plain
from bashgym_pipelines_tool_use_sft.options import RUBRIC, ToolUseOptions
from bashgym_pipelines_tool_use_sft.prompts import judge_prompt, write_prompt
from bashgym_pipelines_tool_use_sft.reshape import NotAConversation, to_messages
from bashgym_pipelines_tool_use_sft.schema import Conversation
from bashgym_pipelines_tool_use_sft.tools import ToolSet, load_tools

if TYPE_CHECKING:
    import pandas as pd

NAME = "tool-use-sft"
CHECK = "tool_call_check"
JUDGE = "judge"
SAMPLED = ("domain", "scenario", "difficulty", "num_tool_calls")
GENERATED = (*SAMPLED, "conversation", CHECK, JUDGE)


def call_check_rules() -> list[Any]:
    """One keep rule per kind of invalid call, so run.json counts each kind apart."""
    return [
        FilterRule(
            keep=f"{{{{ not {CHECK}.unknown_tools }}}}",
            reason="calls a tool that is not in the tool set",
        ),
        FilterRule(
            keep=f"{{{{ not {CHECK}.argument_errors }}}}",
            reason="tool call arguments do not match the tool's JSON schema",
        ),
        FilterRule(
            keep=f"{{{{ not {CHECK}.structure_errors }}}}",
            reason="incomplete conversation (no tool call, request or final answer)",
        ),
    ]


def call_validator(tools: list[dict[str, Any]]) -> Any:
    """A DataDesigner local-callable validator: the `conversation` frame → one check per row."""
    toolset = ToolSet(tools)

    def check_tool_calls(frame: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd  # (see finalize)

        return pd.DataFrame([toolset.check(c).as_cell() for c in frame["conversation"]])

    return check_tool_calls


class ToolUseSftPipeline(Pipeline[ToolUseOptions]):
    """Tool-use conversations over a fixed tool set, as OpenAI tool-use SFT rows."""

    runner = "datadesigner"

    output_format = "chat"

    def build(self, options: ToolUseOptions, run: RunContext, seed: pd.DataFrame | None) -> Any:
        tools = load_tools(options.tools_file)
        rubric = get_rubric(RUBRIC)
        if seed is not None:
            clash = sorted(set(seed.columns) & set(GENERATED))
            if clash:
                raise InputError(f"{NAME}: seed column(s) {clash} clash with generated columns")
        builder = writer_builder(run, options)
        for name, values in (
            ("domain", options.domains),
            ("scenario", options.scenarios),
            ("difficulty", options.difficulties),
            ("num_tool_calls", list(range(options.min_tool_calls, options.max_tool_calls + 1))),
        ):
            builder.add_column(
                dd.SamplerColumnConfig(
                    name=name,
                    sampler_type="category",
                    params=dd.CategorySamplerParams(values=values),
                )
            )
        builder.add_column(
            dd.LLMStructuredColumnConfig(
                name="conversation",
                prompt=write_prompt(tools),
                model_alias=options.model,
                output_format=Conversation,
            )
        )
        builder.add_column(
            dd.ValidationColumnConfig(
                name=CHECK,
                target_columns=["conversation"],
                validator_type="local_callable",
                validator_params=dd.LocalCallableValidatorParams(
                    validation_function=call_validator(tools)
                ),
            )
        )
        add_rubric_judge(
            builder,
            run,
            column=JUDGE,
            rubric=rubric,
            prompt=judge_prompt(rubric.instructions, tools),
            skip=dd.SkipConfig(when=f"{{{{ not {CHECK}.is_valid }}}}"),
            filter_name=NAME,
            keep_rules=call_check_rules(),
            **options.judge_settings(),
        )
        return builder

    def finalize(
        self, dataset: pd.DataFrame, options: ToolUseOptions, run: RunContext
    ) -> Generated:
        """`messages` (system, user, assistant tool calls, tool results, final answer), the
        `tools` schema as JSON text (one Parquet type whatever the schemas hold) and the
        `system_prompt`; the sampled settings and the judge's scores stay as metadata. A row
        that cannot become messages is dropped, and handed back whole (dropped.jsonl)."""
        # ~0.5 s (measured): pandas only when rows are made; this plugin loads with every command
        import pandas as pd

        tools_json = json.dumps(load_tools(options.tools_file), ensure_ascii=False)
        rows, dropped = [], []
        for row in dataset.to_dict(orient="records"):
            try:
                messages = to_messages(row.get("conversation"), options.system_prompt)
            except NotAConversation as exc:
                run.drop(f"{NAME}: {exc}")
                dropped.append(DroppedRow(f"pipeline {NAME}", str(exc), plain(row)))
                continue
            calls = sum(len(m.get("tool_calls", [])) for m in messages)
            rows.append(
                {
                    "messages": messages,
                    "tools": tools_json,
                    "system_prompt": options.system_prompt,
                    **{k: row.get(k) for k in SAMPLED},
                    "tool_calls": calls,
                    JUDGE: row.get(JUDGE),
                }
            )
        columns = ["messages", "tools", "system_prompt", *SAMPLED, "tool_calls", JUDGE]
        return Generated(pd.DataFrame(rows, columns=columns), dropped)
