"""Small pipelines, judges and sinks for tests that run the real CLI and engine end to end.

Why here: the round, count and report tests each need the same few plugins (a pipeline that
asks the scripted model once per row, one whose finalize drops and multiplies rows, handing
back the rows it drops, a judge and a sink that drop known rows); one copy keeps the
scenarios those tests compare alike.
Register one with the `register_plugin` fixture, e.g. `register_plugin(EchoPlugin(), "echo")`.

`Echo` needs bashgym-designer (DataDesigner); it imports it only when a run builds it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from bashgym import hookimpl
from bashgym.contracts import (
    Generated,
    Judge,
    Options,
    Pipeline,
    PipelineOptions,
    Sink,
    Written,
)
from bashgym.records import DroppedRow


class Echo(Pipeline[PipelineOptions]):
    """`echo`: one structured answer per seed row (its `item` column), from the `default` model;
    no finalize. The scripted model server decides which rows answer, fail or stop the run."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        import data_designer.config as dd
        from bashgym_designer.models import model_config
        from pydantic import BaseModel

        class Answer(BaseModel):
            answer: str

        builder = dd.DataDesignerConfigBuilder(
            model_configs=[model_config(run.models.resolve("default"))]
        )
        builder.add_column(
            dd.LLMStructuredColumnConfig(
                name="s", prompt="Answer {{ item }}", model_alias="default", output_format=Answer
            )
        )
        return builder


class EchoLeavingOut(Echo):
    """`Echo` whose finalize leaves out item 5's rows ("finalize: item 5 is left out", by
    `pipeline echo`), counted and handed back whole in a `Generated`."""

    def finalize(self, dataset, options, run):
        out = dataset["item"] == "item 5"
        dropped = [
            DroppedRow("pipeline echo", "finalize: item 5 is left out", row)
            for row in dataset[out].to_dict(orient="records")
        ]
        if dropped:
            run.drop("finalize: item 5 is left out", len(dropped), by="pipeline echo")
        return Generated(dataset[~out].reset_index(drop=True), dropped)


class DropLow(Judge):
    """`droplow`: drops items 0-2 ("low"), so a top-up run needs a second round."""

    def verdicts(self, dataset, options, run):
        return dataset["item"].map(lambda i: "low" if i in ("item 0", "item 1", "item 2") else None)


class BrokenDropLow(DropLow):
    """`DropLow` that fails outright in round 2 when `fail` is set (a judge's bug), after that
    round's finalize."""

    def __init__(self, fail: bool = False) -> None:
        self.fail, self.rounds = fail, 0

    def verdicts(self, dataset, options, run):
        self.rounds += 1
        if self.fail and self.rounds == 2:
            raise RuntimeError("the judge broke")
        return super().verdicts(dataset, options, run)


class EchoPlugin:
    """Registers `pipeline` as `echo` (an `Echo` by default) and, when given, `judge` as
    `droplow`."""

    def __init__(self, pipeline: Pipeline | None = None, judge: Judge | None = None) -> None:
        self.pipeline, self.judge = pipeline or Echo(), judge

    @hookimpl
    def register_pipelines(self, register):
        register("echo", self.pipeline)

    @hookimpl
    def register_judges(self, register):
        if self.judge is not None:
            register("droplow", self.judge)


class Triple(Pipeline[PipelineOptions]):
    """`triple`: no model; drops task b's row in its finalize and makes three rows of each other
    (`part` 0-2): generated differs from requested both ways. Seed column: `task`."""

    runner = "datadesigner"

    def build(self, options, run, seed):
        import data_designer.config as dd

        builder = dd.DataDesignerConfigBuilder()
        builder.add_column(dd.ExpressionColumnConfig(name="prompt", expr="do {{ task }}"))
        return builder

    def finalize(self, dataset, options, run):
        rows, dropped = [], []
        for row in dataset.to_dict(orient="records"):
            if row["task"] == "b":  # counted, and handed back whole (dropped.jsonl)
                run.drop("finalize: b has no parts", by="pipeline triple")
                dropped.append(DroppedRow("pipeline triple", "finalize: b has no parts", row))
                continue
            rows += [{**row, "part": part} for part in range(3)]
        return Generated(pd.DataFrame(rows), dropped)


class NoThirdPart(Judge):
    """`no-third`: drops each row's third part ("a third part"), a judge's drops after
    generation."""

    def verdicts(self, dataset, options, run):
        return dataset["part"].map(lambda p: "a third part" if p == 2 else None)


class Picky(Sink[Options]):
    """`picky`: writes rows as JSON lines to picky.jsonl and refuses task c's, naming each
    `c-<part>`: one sink's drops, the other sinks keep those rows. With `secret`, each id is
    followed by it (a leak test: ids are hostile output that must be scrubbed)."""

    def __init__(self, secret: str = "") -> None:
        self.secret = secret

    def write(self, dataset, options, run, output_format):
        path = run.run_dir / "picky.jsonl"
        kept = 0
        with path.open("w") as fh:
            for row in dataset.to_dict(orient="records"):
                if row["task"] == "c":
                    where = f"c-{row['part']}" + (f" {self.secret}" if self.secret else "")
                    run.drop("c is refused", by="sink picky", row_id=where)
                    continue
                fh.write(json.dumps({k: str(v) for k, v in row.items()}) + "\n")
                kept += 1
        return Written([path], kept)


class TriplePlugin:
    """Registers `triple`, `no-third` and `picky` (`picky` given, or a plain `Picky`)."""

    def __init__(self, picky: Picky | None = None) -> None:
        self.picky = picky or Picky()

    @hookimpl
    def register_pipelines(self, register):
        register("triple", Triple())

    @hookimpl
    def register_judges(self, register):
        register("no-third", NoThirdPart())

    @hookimpl
    def register_sinks(self, register):
        register("picky", self.picky)


def run_triple(cli: Any, env: Any) -> tuple[Any, Path]:
    """`bashgym run -p triple -j no-third -k parquet -k picky` on the seed tasks a-d (with a
    `TriplePlugin` registered): the CLI's result and the run folder."""
    seed = env.workdir / "seed.csv"
    pd.DataFrame({"task": ["a", "b", "c", "d"]}).to_csv(seed, index=False)
    out = env.workdir / "run"
    result = cli(
        "run", "-s", "files", "--set", f"source.path={seed}", "-p", "triple", "-j", "no-third",
        "-k", "parquet", "-k", "picky", "--out", out,
    )  # fmt: skip
    return result, out


def run_echo_top_up(cli: Any, env: Any) -> tuple[Any, Path]:
    """`bashgym run -p echo -j droplow -k parquet --top-up` on `item 0`..`item 5` (with an
    `EchoPlugin(judge=DropLow())` registered and the scripted model's rules set): the CLI's
    result and the run folder."""
    seed = env.workdir / "items.csv"
    pd.DataFrame({"item": [f"item {i}" for i in range(6)]}).to_csv(seed, index=False)
    out = env.workdir / "run"
    result = cli(
        "run", "-s", "files", "--set", f"source.path={seed}", "-p", "echo", "-j", "droplow",
        "-k", "parquet", "--top-up", "--out", out,
    )  # fmt: skip
    return result, out
