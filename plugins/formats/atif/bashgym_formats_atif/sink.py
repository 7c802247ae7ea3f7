"""The `atif` sink: one ATIF document per Trace, so Harbor tooling reads BashGym's traces.

Rows must carry a Trace (a `trace` column: what trace sources and executors produce); a row
without one is dropped with that reason, never written half. Files are named after the trace id
and appear atomically; `manifest.json` lists them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
from pydantic import Field

from bashgym.contracts import Options, RunContext, Sink, Written
from bashgym.records import TRACE_COLUMN, trace_from_row
from bashgym_formats_atif.convert import trace_to_atif


class AtifSinkOptions(Options):
    path: str | None = Field(default=None, description="Output folder; default: RUN_DIR/atif.")


class AtifSink(Sink[AtifSinkOptions]):
    """Traces as ATIF trajectory JSON files, one per trace (lossless: they read back equal)."""

    def write(
        self, dataset: pd.DataFrame, options: AtifSinkOptions, run: RunContext, output_format: str
    ) -> Written:
        folder = Path(options.path) if options.path else run.run_dir / "atif"
        folder.mkdir(parents=True, exist_ok=True)
        if TRACE_COLUMN not in dataset.columns:
            run.drop(
                "rows carry no Trace (use a trace source or an executor)",
                len(dataset),
                by="sink atif",
            )
            return Written([], 0)
        paths: list[Path] = []
        used: set[Path] = set()
        for row in dataset.to_dict(orient="records"):
            try:
                doc = trace_to_atif(trace_from_row(row))
            except (ValueError, TypeError) as exc:
                run.drop(f"not a convertible Trace: {exc}", by="sink atif")
                continue
            name = re.sub(r"[^A-Za-z0-9._-]", "_", str(doc.get("session_id") or "trace"))
            target, n = folder / f"{name}.json", 2
            while target in used:  # two traces of one session never overwrite each other
                target, n = folder / f"{name}-{n}.json", n + 1
            used.add(target)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            tmp.replace(target)
            paths.append(target)
        manifest = folder / "manifest.json"
        manifest.write_text(json.dumps({"files": [p.name for p in paths]}, indent=2) + "\n")
        return Written([*paths, manifest], len(paths))
