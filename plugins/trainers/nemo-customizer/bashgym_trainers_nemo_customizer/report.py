"""loss.json and report.html (inline SVG) for a finished customization job."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any


def write_report(out_dir: Path, points: list[dict[str, Any]], metrics: dict[str, Any]) -> Path:
    (out_dir / "loss.json").write_text(json.dumps(points, indent=1))
    w, h, pad = 640, 240, 24
    lines = []
    for key, colour in (("train_loss", "#1f6feb"), ("val_loss", "#d1242f")):
        series = [(float(p["step"]), float(p[key])) for p in points if key in p]
        if len(series) < 2:
            continue
        xs, ys = [s[0] for s in series], [s[1] for s in series]
        dx, dy = (max(xs) - min(xs)) or 1.0, (max(ys) - min(ys)) or 1.0
        coords = " ".join(
            f"{pad + (x - min(xs)) / dx * (w - 2 * pad):.1f},"
            f"{h - pad - (y - min(ys)) / dy * (h - 2 * pad):.1f}"
            for x, y in series
        )
        lines.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{coords}"/>'
        )
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in metrics.items()
    )
    path = out_dir / "report.html"
    path.write_text(
        '<!doctype html><meta charset="utf-8"><title>NeMo Customizer job</title>'
        f"<h1>NeMo Customizer job</h1><svg width='{w}' height='{h}'>"
        f"<rect width='{w}' height='{h}' fill='#fafafa' stroke='#ccc'/>{''.join(lines)}</svg>"
        f"<p>blue: train_loss, red: val_loss, as the job reported them</p><table>{rows}</table>",
        encoding="utf-8",
    )
    return path
