"""Find and check the chat / tool-use JSONL a run wrote, for training.

Why read run.json's `outputs` first: a sink may write anywhere (`sink.path`), and run.json is
where the run says what it wrote. A line is kept when it is a conversation whose last message is
the assistant's (the SFT target); anything else is counted with its reason, never guessed at.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError

SPLITS = {"train.jsonl": "train", "val.jsonl": "validation"}
ROLES = {"system", "user", "assistant", "tool"}


@dataclass
class Dataset:
    """The conversations to train on, where they came from, and why lines were skipped."""

    train: list[dict[str, Any]]
    validation: list[dict[str, Any]]
    files: list[Path]
    skipped: Counter[str] = field(default_factory=Counter)


def run_files(run_dir: Path) -> list[Path]:
    """The train/val JSONL files the run at `run_dir` wrote (run.json's outputs, else found)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "run.json"
    if not summary_path.is_file():
        raise InputError(f"{run_dir} is not a run directory (no run.json)")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InputError(f"{summary_path} is not JSON: {exc}") from None
    outputs = summary.get("outputs") if isinstance(summary, dict) else None
    named = [
        Path(p)
        for paths in (outputs or {}).values()
        if isinstance(paths, list)
        for p in paths
        if isinstance(p, str) and Path(p).name in SPLITS
    ]
    # a copied run dir: its outputs name the old place; look beside run.json instead
    named = [p if p.is_file() else run_dir / p.parent.name / p.name for p in named]
    found = [p for p in named if p.is_file()] or sorted(
        p for name in SPLITS for p in run_dir.glob(f"*/{name}")
    )
    if not any(p.name == "train.jsonl" for p in found):
        raise InputError(
            f"{run_dir}: the run wrote no train.jsonl (run it with --sink nemo-jsonl, which "
            "writes chat / tool-use JSONL)"
        )
    return found


def check_line(obj: Any) -> str | None:
    """Why `obj` is no SFT example (None: it is one)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return "no messages list"
    messages = obj["messages"]
    if not messages or not all(isinstance(m, dict) for m in messages):
        return "empty or malformed messages"
    if any(m.get("role") not in ROLES for m in messages):
        return "unknown role"
    if messages[-1].get("role") != "assistant":
        return "last message is not the assistant's"
    tools = obj.get("tools")
    if tools is not None and not isinstance(tools, list):
        return "tools is not a list"
    return None


def read_jsonl(path: Path, skipped: Counter[str]) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            skipped["not JSON"] += 1
            continue
        reason = check_line(obj)
        if reason:
            skipped[reason] += 1
            continue
        rows.append(_clean(obj))
    return rows


def _clean(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep what a chat template reads: messages (tool calls' arguments as the JSON objects the
    Qwen/HF templates expect) and tools."""
    messages = []
    for m in obj["messages"]:
        msg = {k: v for k, v in m.items() if v is not None}
        msg.setdefault("content", "")
        calls = msg.get("tool_calls")
        if isinstance(calls, list):
            msg["tool_calls"] = [_call(c) for c in calls if isinstance(c, dict)]
        messages.append(msg)
    out: dict[str, Any] = {"messages": messages}
    if obj.get("tools"):
        out["tools"] = obj["tools"]
    return out


def _call(call: dict[str, Any]) -> dict[str, Any]:
    fn = dict(call.get("function") or {})
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            fn["arguments"] = json.loads(args)
        except ValueError:
            fn["arguments"] = {"raw": args}
    return {**call, "function": fn}


def load_dataset(run_dir: Path) -> Dataset:
    """The run's train and validation conversations; InputError when none can be trained on."""
    files = run_files(run_dir)
    skipped: Counter[str] = Counter()
    train: list[dict[str, Any]] = []
    validation: list[dict[str, Any]] = []
    for path in files:
        rows = read_jsonl(path, skipped)
        (train if SPLITS[path.name] == "train" else validation).extend(rows)
    if not train:
        why = ", ".join(f"{n} {r}" for r, n in skipped.items()) or "the file is empty"
        raise InputError(f"{run_dir}: no trainable conversation in train.jsonl ({why})")
    return Dataset(train=train, validation=validation, files=files, skipped=skipped)
