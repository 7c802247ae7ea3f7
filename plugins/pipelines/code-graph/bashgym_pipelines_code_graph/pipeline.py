"""code-graph-pairs: graph rows → embedding triplets (structural pairs, then judged Q&A pairs).

How the work is split between DataDesigner and `finalize`, and why:
- **Structural pairs come from `finalize`**, computed from the graph that `build` read from the
  seed rows. They are a pure function of the graph and the seed: no model, nothing to retry,
  and hundreds of thousands of them for a large repository. Sending them through DataDesigner
  as rows would cost its ~1 ms of CPU per row for nothing, and worse, tie them to rows a
  failed model call can drop (DataDesigner drops a whole row when one of its LLM cells fails):
  a flaky answer must never take graph edges with it.
- **The Q&A stage is DataDesigner columns** through model aliases: `question` (with
  `qa_gate` beside it: ask, or budget), `answer` (an LLM structured column: text plus the ids
  of the nodes it cites), `qa_check` (a custom column: every id the question names and the
  answer cites must exist in the graph — checked in code, before a judge is paid),
  `relevance` (the `code-qa` rubric through llm-rubric, skipped for rows the check already
  failed), `relevance_score`, and the `code-graph-qa` filter, which drops rejected rows with
  their reason (dropped.jsonl, run.json). Retries, concurrency, resume from finished batches
  and usage accounting are DataDesigner's and the runner's, as for every other pipeline.
- The runner asks DataDesigner for one row per seed row (one per graph node), so the seed
  `build` attaches has exactly that many rows: the questions' rows, spread evenly among them,
  and placeholders that skip every model column. With `qa=false` the config is that seed plus
  one constant column: DataDesigner runs, no model is configured or called.
- The budget (`budget_usd`, `budget_tokens`) is read right before each question is asked:
  `question` is a custom column that sums the tokens DataDesigner's model facades have counted
  so far, prices them with each alias's model (`Model.cost`: its list price, 0 when served
  on this machine), and once the budget is reached marks the row
  `budget` instead of asking; its answer and judge are skipped and finalize counts it
  (`qa.skipped_budget`). A separate gate column cannot do this: DataDesigner's scheduler runs
  cheap columns for every batch up front, before any answer has come back. Calls already in
  flight finish, so the overshoot is at most one round of the alias's parallel requests.
- `finalize` gets only DataDesigner's rows, not the seed, so `build` leaves the graphs it read
  in a memo keyed by the run directory; the runner always calls `build` before `finalize` in
  the same process (a kernel change that hands `finalize` the seed would remove the memo).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import data_designer.config as dd
from bashgym_designer.filters import FilterRule, add_filter
from bashgym_designer.rubrics import (
    add_rubric_judge,
    ensure_model,
    resolve_thresholds,
    writer_builder,
)
from bashgym_designer.settings import designer_settings
from jinja2.sandbox import SandboxedEnvironment

from bashgym.contracts import Generated, InputError, Pipeline, RunContext
from bashgym_pipelines_code_graph.build import build_graph
from bashgym_pipelines_code_graph.model import GRAPH_COLUMNS, graph_rows, graphs_from_rows
from bashgym_pipelines_code_graph.options import CodeGraphPairsOptions
from bashgym_pipelines_code_graph.qa import (
    ANSWER,
    ANSWER_PROMPT,
    ASK,
    BUDGET,
    CATEGORY_GUIDE,
    CHECK,
    GATE,
    JUDGE,
    NONE,
    PROBLEMS,
    QUESTION,
    QUESTION_PROMPT,
    RUBRIC,
    Answer,
    Question,
    Spend,
    check_citations,
    context,
    judge_prompt,
    select,
)
from bashgym_pipelines_code_graph.triplets import NAME, GraphMemo, to_triplets

if TYPE_CHECKING:
    import pandas as pd

FILTER = "code-graph-qa"
REQUIRED = ("repo", "node_id", "kind", "file", "source")
SEED_COLUMNS = ("node_id", "source_repo", "qa_category", "qa_guide", "qa_context")


def check_seed(seed: pd.DataFrame | None) -> pd.DataFrame:
    if seed is None:
        raise InputError(f"{NAME} needs graph rows: add -s code-repo --set source.path=REPO")
    missing = [c for c in REQUIRED if c not in seed.columns]
    if missing:
        raise InputError(
            f"{NAME}: the seed rows are not graph rows (missing {missing}; graph rows have "
            f"{list(GRAPH_COLUMNS)}): use -s code-repo"
        )
    return seed


def designer_rows(options: CodeGraphPairsOptions, frame: pd.DataFrame) -> int:
    """How many rows the runner asks DataDesigner for in the first round: -n, else one per
    graph node (bashgym-work-rounds' `requested_records`). The seed `build` hands DataDesigner
    has exactly that many, so every question slot is reached once: fewer seed rows than
    asked for would make DataDesigner go round the seed and ask questions twice, more would
    leave the slots past -n unasked."""
    return options.num_records or len(frame)


def qa_seed(rows: int, slots: list[tuple[str, str, str, str]]) -> pd.DataFrame:
    """`rows` seed rows: the question slots (node, repo, category, context) spread evenly,
    placeholders between them."""
    # ~0.5 s (measured): pandas only when rows are made, not whenever the plugins load
    import pandas as pd

    table: dict[str, list[str]] = {c: [""] * rows for c in SEED_COLUMNS}
    for i, (node, repo, category, text) in enumerate(slots):
        at = i * rows // len(slots)
        guide = CATEGORY_GUIDE.get(category, category)
        for column, value in zip(SEED_COLUMNS, (node, repo, category, guide, text), strict=True):
            table[column][at] = value
    return pd.DataFrame(table)


def question_column(options: CodeGraphPairsOptions, spend: Spend, restarts: int) -> Any:
    """`question`, with `qa_gate` beside it: asks the model unless the budget is spent.

    A custom column rather than an LLM column because the budget must be read right before
    each request: DataDesigner's scheduler evaluates cheap columns (a separate gate) for every
    batch up front, before any answer comes back. It still calls through DataDesigner's model
    facade for the alias (its retries, concurrency limits and usage counts) and parses with
    DataDesigner's own recipe for a pydantic answer, as an LLM structured column does.
    """
    # DataDesigner's engine costs ~0.2 s to import (measured): only a Q&A run pays it
    from data_designer.engine.models.recipes.response_recipes import PydanticResponseRecipe

    recipe = PydanticResponseRecipe(data_type=Question)
    template = SandboxedEnvironment().from_string(QUESTION_PROMPT)
    aliases = list(dict.fromkeys([options.model, options.judge_model]))

    @dd.custom_column_generator(
        required_columns=["qa_category", "qa_guide", "qa_context"],
        side_effect_columns=[GATE],
        model_aliases=aliases,
    )
    def question(row: dict[str, Any], generator_params: Any, models: Any) -> dict[str, Any]:
        tokens, dollars = spend(models)
        spent = (options.budget_tokens is not None and tokens >= options.budget_tokens) or (
            options.budget_usd is not None and dollars >= options.budget_usd
        )
        if spent:
            row[GATE], row[QUESTION] = BUDGET, {"question": "", "nodes": []}
            return row
        prompt = recipe.apply_recipe_to_user_prompt(template.render(**row))
        asked, _ = models[options.model].generate(
            prompt=prompt,
            parser=recipe.parse,
            max_conversation_restarts=restarts,
            purpose=f"running generation for column '{QUESTION}'",
        )
        row[GATE], row[QUESTION] = ASK, asked.model_dump()
        return row

    return dd.CustomColumnConfig(
        name=QUESTION,
        generator_function=question,
        skip=dd.SkipConfig(when='{{ qa_category == "" }}'),
    )


def check_column(known: dict[str, set[str]]) -> Any:
    @dd.custom_column_generator(required_columns=[QUESTION, ANSWER, "source_repo"])
    def qa_check(row: dict[str, Any]) -> dict[str, Any]:
        row[CHECK] = check_citations(row, known)
        return row

    return dd.CustomColumnConfig(name=CHECK, generator_function=qa_check)


def keep_rules(options: CodeGraphPairsOptions) -> list[Any]:
    """Drop a question row whose citations fail, then one the judge scores too low; every
    other row (placeholders, budget-skipped) passes."""
    guard = f'{GATE} != "{ASK}"'
    rules = [
        FilterRule(
            keep=f'{{{{ {guard} or ((({CHECK} or {{}})["problem"]) or "") != "{code}" }}}}',
            reason=f"code-qa: {text}",
        )
        for code, text in PROBLEMS.items()
    ]
    if options.drop_below:
        for name, value in resolve_thresholds(RUBRIC, options.thresholds).items():
            rules.append(
                FilterRule(
                    keep=f"{{{{ {guard} or ({name}_score or 0) >= {value} }}}}",
                    reason=f"{RUBRIC.name}: {name} below {value}",
                )
            )
    return rules


def score_columns() -> list[Any]:
    """`<criterion>_score` (int, 0 when missing): DataDesigner's Jinja sandbox refuses a
    filter condition that both guards a row and reads a nested judge score in one template."""
    return [
        dd.ExpressionColumnConfig(
            name=f"{c.name}_score",
            expr=f'{{{{ ((({JUDGE} or {{}})["{c.name}"] or {{}})["score"] or 0) | int }}}}',
            dtype="int",
        )
        for c in RUBRIC.criteria
    ]


class CodeGraphPairsPipeline(Pipeline[CodeGraphPairsOptions]):
    """Graph rows → (anchor, positive, hard negative) triplets: structural and judged Q&A."""

    runner = "datadesigner"

    output_format = "triplets"
    needs_seed = True

    def __init__(self) -> None:
        self._memos: dict[str, GraphMemo] = {}

    def memo(self, run: RunContext, seed: pd.DataFrame) -> GraphMemo:
        key = str(run.run_dir)
        graphs = graphs_from_rows(seed.to_dict(orient="records"))
        old = self._memos.get(key)
        memo = GraphMemo(graphs, run.seed)
        if old is not None and set(old.graphs) == set(graphs):  # a later round of the run
            memo.structural_done, memo.qa_done = old.structural_done, old.qa_done
        self._memos[key] = memo
        return memo

    def build(
        self, options: CodeGraphPairsOptions, run: RunContext, seed: pd.DataFrame | None
    ) -> Any:
        frame = check_seed(seed)
        memo = self.memo(run, frame)
        slots = []
        if options.qa and not memo.qa_done:
            for repo, graph in memo.graphs.items():
                for node, category in select(
                    graph, run.seed, options.questions_per_repo, options.categories
                ):
                    slots.append((node, repo, category, context(graph, node)))
        rows = designer_rows(options, frame)
        if len(slots) > rows:
            why = f"-n {rows}" if options.num_records else f"{rows} graph nodes"
            run.note(
                f"{NAME}: {why} leaves room for {rows} of the {len(slots)} questions "
                "(each accepted one gives at least one triplet)"
            )
        rows = qa_seed(rows, slots[:rows])
        if not options.qa:
            builder = dd.DataDesignerConfigBuilder()
            builder.with_seed_dataset(
                dd.DataFrameSeedSource(df=rows), sampling_strategy=dd.SamplingStrategy.ORDERED
            )
            builder.add_column(dd.ExpressionColumnConfig(name=GATE, expr=NONE))
            return builder
        return self.qa_builder(options, run, memo, rows)

    def qa_builder(
        self, options: CodeGraphPairsOptions, run: RunContext, memo: GraphMemo, rows: Any
    ) -> Any:
        builder = writer_builder(run, options)
        ensure_model(builder, options.judge_model, run)
        builder.with_seed_dataset(
            dd.DataFrameSeedSource(df=rows), sampling_strategy=dd.SamplingStrategy.ORDERED
        )
        assert run.models is not None, "the engine opens a model session for every run"
        aliases = dict.fromkeys([options.model, options.judge_model])
        memo.spend = Spend({alias: run.models.resolve(alias) for alias in aliases})
        restarts = designer_settings(run.settings).max_conversation_restarts
        builder.add_column(question_column(options, memo.spend, restarts))
        skip = dd.SkipConfig(when=f'{{{{ {GATE} != "{ASK}" }}}}')
        builder.add_column(
            dd.LLMStructuredColumnConfig(
                name=ANSWER, prompt=ANSWER_PROMPT, model_alias=options.model,
                output_format=Answer, skip=skip,
            )
        )  # fmt: skip
        known = {repo: set(graph.nodes) for repo, graph in memo.graphs.items()}
        builder.add_column(check_column(known))
        judge_skip = f'{{{{ {GATE} != "{ASK}" or not ((({CHECK} or {{}})["valid"]) or false) }}}}'
        add_rubric_judge(
            builder,
            run,
            column=JUDGE,
            rubric=RUBRIC,
            model_alias=options.judge_model,
            prompt=judge_prompt(),
            skip=dd.SkipConfig(when=judge_skip),
            drop_below=False,
        )
        for column in score_columns():
            builder.add_column(column)
        add_filter(builder, FILTER, keep_rules(options))
        return builder

    def finalize(
        self, dataset: pd.DataFrame, options: CodeGraphPairsOptions, run: RunContext
    ) -> Generated:
        memo = self._memos.get(str(run.run_dir))
        if memo is None:
            raise RuntimeError(f"{NAME}: finalize before build in this run")
        return to_triplets(dataset, memo, options, run)

    def example_seed(self, options: CodeGraphPairsOptions) -> pd.DataFrame:
        """This plugin's own source as a graph: real code, always installed with it."""
        import pandas as pd  # (see qa_seed)

        built = build_graph("bashgym-pipelines-code-graph", Path(__file__).parent)
        return pd.DataFrame(graph_rows(built.graph), columns=list(GRAPH_COLUMNS))
