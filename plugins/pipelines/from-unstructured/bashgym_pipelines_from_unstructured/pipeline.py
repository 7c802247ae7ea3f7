"""from-unstructured: document chunks → a question per chunk → an answer grounded in it → judged.

Why chunk seeds and not DataDesigner's MCP tool calling (letting the model browse the files):
- Every answer is tied to a known span: the chunk the question was asked about, with its path
  and lines, is the evidence the judge checks against and the metadata each row carries. With
  browsing, what the model read is whatever it chose to open, so groundedness cannot be
  checked against a fixed text, only against a trace.
- No MCP server process to start, supervise and stop per run, and nothing the model can reach
  beyond the documents it was given.
- Deterministic and exportable: the same chunks give the same prompts, the config is plain
  sampler/LLM/expression columns (`write_config` works), and a resumed run redoes nothing.
- Cost: one request per column per row. Browsing spends extra round trips (list, open, read)
  per row before a question is even asked, which small local models also handle poorly.
The documents source's overlap between chunks covers answers that straddle a cut; questions
spanning whole documents are what browsing would add, and are out of scope here.

Columns: samplers `question_type` and `difficulty`; `chunk_usable` (bool expression: the chunk
has at least `min_chunk_chars` characters; shorter ones skip every model call and are dropped
with a reason); `chunk_id` (`path#chunk_index`, when the source has both); `question` and
`answer` (LLM text); `judge` (the "groundedness" rubric, shown the chunk as the document).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.filters import FilterRule
from bashgym_designer.rubrics import add_rubric_judge, get_rubric, writer_builder

from bashgym.contracts import Generated, InputError, Pipeline, RunContext
from bashgym_pipelines_from_unstructured.examples import example_rows
from bashgym_pipelines_from_unstructured.options import RUBRIC, FromUnstructuredOptions
from bashgym_pipelines_from_unstructured.prompts import answer_prompt, ask_prompt, judge_prompt
from bashgym_pipelines_from_unstructured.reshape import GENERATED, JUDGE, NAME, USABLE, to_rows

if TYPE_CHECKING:
    import pandas as pd


def check_seed(seed: pd.DataFrame | None, options: FromUnstructuredOptions) -> list[str]:
    """The seed's columns, after checking it has the text column and no clashing names."""
    if seed is None:
        raise InputError(f"{NAME} needs a source, e.g. -s documents --set source.path=docs/")
    columns = [str(c) for c in seed.columns]
    if options.text_column not in columns:
        raise InputError(
            f"{NAME}: the seed has no text column {options.text_column!r}; its columns are "
            f"{columns} (set pipeline.text_column)"
        )
    if not options.text_column.isidentifier():
        raise InputError(f"{NAME}: text_column {options.text_column!r} must be a plain name")
    clash = sorted(set(columns) & set(GENERATED))
    if clash:
        raise InputError(f"{NAME}: seed column(s) {clash} clash with generated columns")
    return columns


class FromUnstructuredPipeline(Pipeline[FromUnstructuredOptions]):
    """Grounded question/answer rows from document chunks, judged for groundedness."""

    runner = "datadesigner"

    output_format = "rows"
    needs_seed = True

    def build(
        self, options: FromUnstructuredOptions, run: RunContext, seed: pd.DataFrame | None
    ) -> Any:
        columns = check_seed(seed, options)
        text = options.text_column
        rubric = get_rubric(RUBRIC)
        builder = writer_builder(run, options)
        for name, values in (
            ("question_type", options.question_types),
            ("difficulty", options.difficulties),
        ):
            builder.add_column(
                dd.SamplerColumnConfig(
                    name=name,
                    sampler_type="category",
                    params=dd.CategorySamplerParams(values=values),
                )
            )
        usable = f"{{{{ ({text} | string | trim | length) >= {options.min_chunk_chars} }}}}"
        builder.add_column(dd.ExpressionColumnConfig(name=USABLE, expr=usable, dtype="bool"))
        if {"path", "chunk_index"} <= set(columns):
            expr = "{{ path }}#{{ chunk_index }}"
            builder.add_column(dd.ExpressionColumnConfig(name="chunk_id", expr=expr))
        builder.add_column(
            dd.LLMTextColumnConfig(
                name="question",
                prompt=ask_prompt(text, columns, standalone=options.prompt_style == "question"),
                model_alias=options.model,
                skip=dd.SkipConfig(when=f"{{{{ not {USABLE} }}}}"),
            )
        )
        builder.add_column(  # skipped with the question
            dd.LLMTextColumnConfig(
                name="answer",
                prompt=answer_prompt(text, columns, options.cite),
                model_alias=options.model,
            )
        )
        too_short = f"chunk shorter than {options.min_chunk_chars} characters"
        add_rubric_judge(
            builder,
            run,
            column=JUDGE,
            rubric=rubric,
            prompt=judge_prompt(rubric.instructions, text, columns),
            filter_name=NAME,
            keep_rules=[FilterRule(keep=f"{{{{ {USABLE} }}}}", reason=too_short)],
            **options.judge_settings(),
        )
        return builder

    def finalize(
        self, dataset: pd.DataFrame, options: FromUnstructuredOptions, run: RunContext
    ) -> Generated:
        return to_rows(dataset, options, run)

    def example_seed(self, options: FromUnstructuredOptions) -> pd.DataFrame:
        # ~0.5 s (measured): pandas only when a seed is made, not whenever the plugins load
        import pandas as pd

        return pd.DataFrame(example_rows())
