"""from-external: any source's rows + a column mapping → judged instruction/response rows.

Columns: `gen_has_instruction` / `gen_has_reference` (bool expressions: does the row's mapped
cell hold text), `gen_prompt` (expression: the instruction, then the context), `gen_system`
(expression: the row's system prompt), `gen_response` (the writer's answer, or in `keep` mode
the reference answer itself), `gen_judge` (the "instruction-response" rubric). Where the
instruction is empty every later column is skipped, not failed, so the bashgym-filter
processor can drop the row with its reason, as it does rows with no reference to keep and
rows below the thresholds. Generated columns carry a `gen_` prefix because external seeds
very often already have `prompt` / `response` columns, and DataDesigner refuses a generated
column named like a seed column; `finalize` gives them their final names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.filters import FilterRule
from bashgym_designer.rubrics import add_rubric_judge, get_rubric, writer_builder

from bashgym.contracts import Generated, InputError, Pipeline, RunContext
from bashgym_pipelines_from_external.examples import example_rows
from bashgym_pipelines_from_external.mapping import NAME, check_columns, resolve_mapping
from bashgym_pipelines_from_external.options import RUBRIC, FromExternalOptions
from bashgym_pipelines_from_external.prompts import (
    HAS_INSTRUCTION,
    HAS_REFERENCE,
    flag_expr,
    prompt_expr,
    reference_expr,
    system_expr,
    writer_prompt,
)
from bashgym_pipelines_from_external.reshape import (
    GENERATED,
    JUDGE,
    PROMPT,
    RESPONSE,
    SYSTEM,
    to_rows,
)

if TYPE_CHECKING:
    import pandas as pd


def keep_rules(options: FromExternalOptions) -> list[Any]:
    rules = [FilterRule(keep=f"{{{{ {HAS_INSTRUCTION} }}}}", reason="empty instruction")]
    if options.reference == "keep":
        reason = "no reference answer to keep"
        rules.append(FilterRule(keep=f"{{{{ {HAS_REFERENCE} }}}}", reason=reason))
    rules.append(
        FilterRule(
            keep=f"{{{{ {RESPONSE} is string and {RESPONSE} | trim | length > 0 }}}}",
            reason="empty response",
        )
    )
    return rules


class FromExternalPipeline(Pipeline[FromExternalOptions]):
    """Instruction/response rows from any source's rows through a column mapping, judged."""

    runner = "datadesigner"

    output_format = "rows"
    needs_seed = True

    def build(
        self, options: FromExternalOptions, run: RunContext, seed: pd.DataFrame | None
    ) -> Any:
        if seed is None:
            raise InputError(f"{NAME} needs a source, e.g. -s files --set source.path=data.csv")
        clash = sorted(set(seed.columns) & set(GENERATED))
        if clash:
            raise InputError(f"{NAME}: seed column(s) {clash} clash with generated columns")
        mapping = resolve_mapping(list(seed.columns), options.mapping)
        check_columns(seed, mapping)
        if options.reference == "keep" and "reference_answer" not in mapping:
            raise InputError(
                f"{NAME}: reference = 'keep' needs a reference answer column; the seed's columns "
                f"are {list(seed.columns)} (set pipeline.mapping.reference_answer=COLUMN)"
            )
        builder = writer_builder(run, options)
        flags = {HAS_INSTRUCTION: mapping["instruction"]}
        if "reference_answer" in mapping:
            flags[HAS_REFERENCE] = mapping["reference_answer"]
        for name, column in flags.items():
            builder.add_column(
                dd.ExpressionColumnConfig(name=name, expr=flag_expr(column), dtype="bool")
            )
        no_instruction = dd.SkipConfig(when=f"{{{{ not {HAS_INSTRUCTION} }}}}")
        builder.add_column(
            dd.ExpressionColumnConfig(name=PROMPT, expr=prompt_expr(mapping), skip=no_instruction)
        )
        builder.add_column(
            dd.ExpressionColumnConfig(name=SYSTEM, expr=system_expr(mapping, options.system_prompt))
        )
        if options.reference == "keep":
            builder.add_column(
                dd.ExpressionColumnConfig(
                    name=RESPONSE,
                    expr=reference_expr(mapping),
                    skip=dd.SkipConfig(when=f"{{{{ not {HAS_REFERENCE} }}}}"),
                )
            )
        else:  # skipped, like every column reading gen_prompt, where the instruction is empty
            builder.add_column(
                dd.LLMTextColumnConfig(
                    name=RESPONSE,
                    prompt=writer_prompt(mapping, options.reference),
                    system_prompt=f"{{{{ {SYSTEM} }}}}",
                    model_alias=options.model,
                )
            )
        add_rubric_judge(  # the judge is skipped where the response was
            builder,
            run,
            column=JUDGE,
            rubric=get_rubric(RUBRIC),
            prompt_column=PROMPT,
            response_column=RESPONSE,
            filter_name=NAME,
            keep_rules=keep_rules(options),
            **options.judge_settings(),
        )
        return builder

    def finalize(
        self, dataset: pd.DataFrame, options: FromExternalOptions, run: RunContext
    ) -> Generated:
        return to_rows(dataset, options.reference, run)

    def example_seed(self, options: FromExternalOptions) -> pd.DataFrame:
        # ~0.5 s (measured): pandas only when a seed is made, not whenever the plugins load
        import pandas as pd

        return pd.DataFrame(example_rows())
