"""The `atif` sink: one ATIF document per Trace, so Harbor tooling reads BashGym's traces.

Rows must carry a Trace (a `trace` column: what trace sources and executors produce); a row
without one is dropped with that reason, never written half. Files are named after the trace id
and appear atomically; `manifest.json` lists them. Subagents are ATIF's own: each one is a
trajectory file beside its parent, named by a `subagent_trajectory_ref` in the result of the
tool call that started it (`<parent>.subagent-<agent id>.json`; one read from a reference keeps the
name it had), so Harbor's tools find it. A subagent whose spawning call is unknown has no
result to hang a reference on and stays inline in `extra.bashgym` (counted as
`atif.inline_subagents`); one whose file name is taken or leaves the folder is dropped with
that reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from bashgym_procs.names import safe_name
from pydantic import Field

from bashgym.contracts import Options, RunContext, Sink, Written
from bashgym.records import TRACE_COLUMN, Trace, trace_from_row
from bashgym_formats_atif.convert import refer_subagents, trace_to_atif
from bashgym_formats_atif.source import MANIFEST


class AtifSinkOptions(Options):
    path: str | None = Field(default=None, description="Output folder; default: RUN_DIR/atif.")


class AtifSink(Sink[AtifSinkOptions]):
    """Traces as ATIF trajectory JSON files, one per trace (lossless: they read back equal)."""

    def refuses(self, options: AtifSinkOptions, output_format: str) -> str | None:
        """A pipeline's chat, DPO or triplet rows carry no Trace: refused before the run, not
        dropped one by one after its generation (plain `rows` may be trace rows read back, and a
        third party's format is judged by its rows' `trace` column, as `write` does)."""
        if output_format not in ("chat", "dpo", "triplets"):
            return None
        return (
            f"it writes Traces (from a transcript source or an executor), and this run makes "
            f"{output_format!r} rows, which carry none: use -k parquet (or -k nemo-jsonl for "
            "chat or DPO rows)"
        )

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
        nested: list[Path] = []
        used: set[Path] = set()
        for row in dataset.to_dict(orient="records"):
            try:
                trace = trace_from_row(row)
            except (ValueError, TypeError) as exc:
                run.drop(f"not a convertible Trace: {exc}", by="sink atif")
                continue
            # a session id is data: safe_name keeps it in the folder and short enough for
            # the file system; `manifest` is this sink's own file, never a trace's (the name
            # is the document's session_id: the provenance's, else the trace id)
            session = trace.provenance.session_id
            name = safe_name(str(session if session is not None else trace.id) or "trace")
            name = "manifest-trace" if name == "manifest" else name
            target, n = folder / f"{name}.json", 2
            while target in used:  # two traces of one session never overwrite each other
                target, n = folder / f"{name}-{n}.json", n + 1
            try:
                trace, inline = refer_subagents(trace, lambda sub, s=target.stem: _sub_name(s, sub))
                doc = trace_to_atif(trace)
            except (ValueError, TypeError) as exc:
                run.drop(f"not a convertible Trace: {exc}", by="sink atif")
                continue
            used.add(target)
            _write_json(target, doc)
            paths.append(target)
            if inline:
                run.count("atif.inline_subagents", inline)
            nested += self._referenced(trace, folder, used, run)
        manifest = folder / MANIFEST
        listing: dict[str, list[str]] = {"files": [p.name for p in paths]}
        if nested:
            listing["subagent_files"] = [str(p.relative_to(folder)) for p in nested]
        manifest.write_text(json.dumps(listing, indent=2) + "\n")
        return Written([*paths, *nested, manifest], len(paths))

    def _referenced(
        self, trace: Trace, folder: Path, used: set[Path], run: RunContext
    ) -> list[Path]:
        """Subagents that came from a `subagent_trajectory_ref`, written where it points."""
        out: list[Path] = []
        for sub in trace.subagents:
            ref = (sub.provenance.extra.get("atif") or {}).get("ref") or {}
            name = ref.get("trajectory_path") if isinstance(ref, dict) else None
            if not isinstance(name, str):
                continue
            target = folder / name
            if target in used or not target.resolve().is_relative_to(folder.resolve()):
                run.drop(f"subagent trajectory {name} cannot be written beside its parent",
                         by="sink atif")  # fmt: skip
                continue
            used.add(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_json(target, trace_to_atif(sub))
            out.append(target)
            out += self._referenced(sub, target.parent, used, run)
        return out


def _sub_name(stem: str, sub: Trace) -> str:
    """`<parent>.subagent-<agent id>.json` (the trace id when the source recorded no agent
    id): beside the parent, named after both; an id is data, so safe_name bounds it."""
    agent = sub.provenance.extra.get("agent_id")
    return f"{stem}.subagent-{safe_name(str(agent or sub.id))}.json"


def _write_json(target: Path, doc: dict) -> None:
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(target)
