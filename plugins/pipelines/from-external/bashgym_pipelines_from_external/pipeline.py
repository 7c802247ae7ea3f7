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

from bashgym.contracts import InputError, Pipeline, RunContext
from bashgym_pipelines_from_external.examples import example_rows
from bashgym_pipelines_from_external.mapping import NAME, check_columns, resolve_mapping
from bashgym_pipelines_from_external.options import FromExternalOptions
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

RUBRIC = "instruction-response"


def keep_rules(options: FromExternalOptions) -> list[Any]:
    from bashgym_judges_filter import FilterRule

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


class FromExternalPipeline(Pipeline):
    """Instruction/response rows from any source's rows through a column mapping, judged."""

    Options = FromExternalOptions
    output_format = "rows"
    needs_seed = True

    def build(
        self, options: FromExternalOptions, run: RunContext, seed: pd.DataFrame | None
    ) -> Any:
        import data_designer.config as dd
        from bashgym_judges_filter import add_filter
        from bashgym_judges_llm_rubric import get_rubric, judge_column, threshold_rules

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
        rubric = get_rubric(RUBRIC)
        assert run.models is not None, "the engine opens a ModelSession for every run"
        params = {} if options.temperature is None else {"temperature": options.temperature}
        models = [run.models.model_config(options.model, **params)]
        if options.judge_model != options.model:
            models.append(run.models.model_config(options.judge_model))
        builder = dd.DataDesignerConfigBuilder(model_configs=models)
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
        judge = judge_column(
            JUDGE,
            rubric,
            model_alias=options.judge_model,
            prompt_column=PROMPT,
            response_column=RESPONSE,
        )
        builder.add_column(judge)  # skipped where the response was
        rules = keep_rules(options)
        if options.drop_below:
            rules += threshold_rules(JUDGE, rubric, options.thresholds or None)
        add_filter(builder, NAME, rules)
        return builder

    def finalize(
        self, dataset: pd.DataFrame, options: FromExternalOptions, run: RunContext
    ) -> pd.DataFrame:
        return to_rows(dataset, options.reference, run)

    def example_seed(self, options: FromExternalOptions) -> pd.DataFrame:
        import pandas as pd

        return pd.DataFrame(example_rows())
