"""The training's loss curve: `loss.json` (appended as training goes, so a killed run keeps what
it logged) and `report.html` (inline SVG, no script, no plotting library) under the output dir."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

LOSS_FILE = "loss.json"
REPORT_FILE = "report.html"


def write_loss(out_dir: Path, points: list[dict[str, float]]) -> Path:
    path = out_dir / LOSS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(points, indent=1))
    tmp.replace(path)
    return path


def _polyline(points: list[tuple[float, float]], w: int, h: int, pad: int) -> tuple[str, str]:
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y0, y1 = min(ys), max(ys) if max(ys) > min(ys) else min(ys) + 1
    coords = " ".join(
        f"{pad + (x - x0) / (x1 - x0) * (w - 2 * pad):.1f},"
        f"{h - pad - (y - y0) / (y1 - y0) * (h - 2 * pad):.1f}"
        for x, y in points
    )
    axis = f"steps {x0:g}–{x1:g}, loss {y0:.3f}–{y1:.3f}"
    return coords, axis


def write_report(out_dir: Path, points: list[dict[str, float]], metrics: dict[str, Any]) -> Path:
    """report.html: the loss per step (and validation loss when there was a validation set)."""
    w, h, pad = 640, 280, 30
    lines = []
    for key, colour in (("loss", "#1f6feb"), ("eval_loss", "#d1242f")):
        series = [(p["step"], p[key]) for p in points if key in p]
        if series:
            coords, axis = _polyline(series, w, h, pad)
            lines.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>'
            )
            lines.append(f"<!-- {key}: {axis} -->")
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in metrics.items()
    )
    page = f"""<!doctype html><meta charset="utf-8"><title>bashgym train</title>
<style>body{{font-family:sans-serif;margin:2em}}td,th{{text-align:left;padding:2px 8px}}</style>
<h1>Training loss</h1>
<svg width="{w}" height="{h}" role="img" aria-label="loss per step">
<rect x="0" y="0" width="{w}" height="{h}" fill="#fafafa" stroke="#ccc"/>
{"".join(lines) or '<text x="20" y="40">no loss was logged</text>'}
</svg>
<p>blue: training loss per logged step; red: validation loss (when the run wrote val.jsonl).</p>
<table>{rows}</table>
"""
    path = out_dir / REPORT_FILE
    path.write_text(page, encoding="utf-8")
    return path
