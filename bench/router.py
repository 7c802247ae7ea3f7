"""Router quality without a model: the confidence router against random routing, always-student,
always-teacher and an oracle on a simulated outcome set — the cost/quality frontier as a PNG and
a table.

Why simulated: a routing policy is judged on many tasks whose outcomes under both executors are
known; real runs give one executor's outcome per task at a cost. The simulation
(`bashgym_routers_confidence.simulate`) draws tasks with a latent difficulty, a student and a
teacher whose chance of passing falls with it (teacher ~40x the price per turn), and prompts
whose features (length, paths, code, plan estimate, keywords) are noisy functions of the
difficulty. The router is the real one: the plugin's feature extraction and its fit
(scikit-learn's calibrated logistic regression) on the train tasks' verified outcomes (both
executors ran every train task, as two plain runs with checks would record); every figure below
is measured on held-out tasks, each with one drawn outcome per executor.

Policies, each a curve of (cost, success) on the held-out tasks:
- router: student when p(student passes) >= threshold, the threshold swept over every quantile
  of p (teacher share 0..1);
- router + escalation: the same, and a student-routed task that fails its check runs again on
  the teacher (paying both);
- random: the same teacher share, tasks picked at random (its expected cost and success);
- oracle: knows each task's outcomes: the teacher gets exactly the tasks the student fails and
  the teacher passes, cheapest first;
- always-student, always-teacher: the two ends.
Cost is in units of always-teacher's; a curve between its points is what mixing two thresholds
at random achieves. The area under a policy's frontier (best success at cost <= x, x from
always-student's cost to always-teacher's) is compared with the oracle's.

Scenarios (the same code, other simulation settings): the default (the student passes about
half the tasks; an executor's price grows with the turns a task takes, so hard tasks cost the
teacher most); a flat price per task (RouteLLM's setting: what routing saves is then the share
of calls); a stronger student (it passes about two thirds); and both. Each prints its table and
writes its PNG.

Targets (reported, not asserted): >= 95% of always-teacher's success at <= half its cost, and
>= 90% of the oracle's area under the frontier.

    uv run python bench/router.py [--quick] [--train N] [--test N] [--seed S] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from bashgym_routers_confidence.features import task_features
from bashgym_routers_confidence.fitted import fit
from bashgym_routers_confidence.outcomes import Outcome
from bashgym_routers_confidence.simulate import STUDENT, SimTask, simulate
from bashgym_routers_confidence.simulate import Curve as SimCurve
from bashgym_routers_confidence.thresholds import Target

TARGET_RETAINED, TARGET_COST, TARGET_AREA = 0.95, 0.5, 0.90


@dataclass
class Curve:
    name: str
    cost: np.ndarray  # in units of always-teacher's cost
    success: np.ndarray
    share: np.ndarray  # tasks sent to the teacher first


def outcomes_of(sims: list[SimTask]) -> list[Outcome]:
    """Both executors' verified outcomes on every train task (two plain runs with checks)."""
    out = []
    for s in sims:
        f = task_features(s.task)
        out.append(Outcome(s.task.id, "student", f, s.student_passes, s.student_cost, s.turns))
        out.append(Outcome(s.task.id, "claude-cli", f, s.teacher_passes, s.teacher_cost, s.turns))
    return out


def curves(
    p: np.ndarray, test: list[SimTask], *, flat: bool = False
) -> tuple[dict[str, Curve], float]:
    """Every policy's curve on `test`; `flat`: each executor's price per task is its mean
    (RouteLLM's setting), instead of growing with the turns a task takes."""
    s_pass = np.array([t.student_passes for t in test], dtype=float)
    t_pass = np.array([t.teacher_passes for t in test], dtype=float)
    s_cost = np.array([t.student_cost for t in test])
    t_cost = np.array([t.teacher_cost for t in test])
    if flat:
        s_cost, t_cost = np.full_like(s_cost, s_cost.mean()), np.full_like(t_cost, t_cost.mean())
    unit = t_cost.sum()  # always-teacher's cost
    n = len(test)
    o = np.argsort(p, kind="stable")  # lowest p first: the first k go to the teacher

    def split(first: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """For k = 0..n: the sum of `first` over the k lowest-scored tasks + `rest` over the
        others (cumulative sums: every threshold at once)."""
        head = np.concatenate([[0.0], np.cumsum(first[o])])
        tail = np.concatenate([np.cumsum(rest[o][::-1])[::-1], [0.0]])
        return head + tail

    share = np.arange(n + 1) / n
    router = list(zip(split(t_cost, s_cost), split(t_pass, s_pass) / n, strict=True))
    # escalated: a student-routed task whose attempt failed its check runs on the teacher too
    failed = 1.0 - s_pass
    cascade = list(
        zip(
            split(t_cost, s_cost + failed * t_cost),
            split(t_pass, s_pass + failed * t_pass) / n,
            strict=True,
        )
    )
    random = [
        ((1 - q) * s_cost.sum() + q * unit, (1 - q) * s_pass.mean() + q * t_pass.mean())
        for q in share
    ]
    # oracle: from all-student, hand the teacher each task it wins (student fails, teacher
    # passes), the cheapest extra cost first; nothing else gains
    gain = np.flatnonzero((s_pass == 0) & (t_pass == 1))
    gain = gain[np.argsort((t_cost - s_cost)[gain], kind="stable")]
    cost, succ, oracle = s_cost.sum(), s_pass.sum(), [(s_cost.sum(), s_pass.mean())]
    for i in gain:
        cost, succ = cost + t_cost[i] - s_cost[i], succ + 1
        oracle.append((cost, succ / n))
    oracle_share = np.arange(len(oracle)) / n

    def curve(name: str, points: list[tuple[float, float]], q: np.ndarray) -> Curve:
        c, s = np.array(points).T
        return Curve(name, c / unit, s, q)

    # escalating is a choice too: with k = n it is always-student, whose point it can take
    cascade_share = np.append(share, 0.0)
    cascade.append((s_cost.sum(), s_pass.mean()))
    return {
        "router": curve("router", router, share),
        "router + escalation": curve("router + escalation", cascade, cascade_share),
        "random": curve("random", random, share),
        "oracle": curve("oracle", oracle, oracle_share),
    }, unit


def frontier(c: Curve, xs: np.ndarray) -> np.ndarray:
    """Best success at cost <= x (points joined by straight lines: mixing two thresholds)."""
    order = np.argsort(c.cost, kind="stable")
    cost, success = c.cost[order], np.maximum.accumulate(c.success[order])
    return np.where(xs < cost[0], np.nan, np.interp(xs, cost, success))


def area(c: Curve, lo: float, hi: float) -> float:
    xs = np.linspace(lo, hi, 2001)
    ys = np.nan_to_num(frontier(c, xs), nan=0.0)
    return float(np.trapezoid(ys, xs) / (hi - lo))


def cheapest_at(c: Curve, success: float) -> tuple[float, float, float] | None:
    """(cost, success, teacher share) of the cheapest point reaching `success`; None if none."""
    ok = np.flatnonzero(c.success >= success - 1e-12)
    if not len(ok):
        return None
    i = ok[np.argmin(c.cost[ok])]
    return float(c.cost[i]), float(c.success[i]), float(c.share[i])


def plot(
    cs: dict[str, Curve], ends: dict[str, tuple[float, float]], path: Path, title: str
) -> None:
    """The frontier as a PNG. Drawn with Pillow (already in the dev group) rather than
    matplotlib, which would be a new dependency of every install that runs the bench: five
    polylines, two points, axes and a legend are all this needs."""
    from PIL import Image, ImageDraw, ImageFont

    w, h, left, right, top, bottom = 900, 620, 80, 30, 50, 70
    img = Image.new("RGB", (w, h), "white")
    draw = ImageDraw.Draw(img)
    try:
        font = ImageFont.load_default(size=14)
    except TypeError:  # Pillow without FreeType: the bitmap font
        font = ImageFont.load_default()
    lo_y = min(float(np.min(c.success)) for c in cs.values())
    lo_y = max(0.0, np.floor(lo_y * 10) / 10)
    hi_y = 1.0

    def xy(x: float, y: float) -> tuple[float, float]:
        return (
            left + x * (w - left - right),
            top + (hi_y - y) / (hi_y - lo_y) * (h - top - bottom),
        )

    for k in range(11):  # grid and ticks
        x = k / 10
        draw.line([xy(x, lo_y), xy(x, hi_y)], fill=(232, 232, 232))
        draw.text((xy(x, lo_y)[0] - 10, h - bottom + 8), f"{x:.1f}", fill="black", font=font)
        y = lo_y + k * (hi_y - lo_y) / 10
        draw.line([xy(0, y), xy(1, y)], fill=(232, 232, 232))
        draw.text((left - 45, xy(0, y)[1] - 8), f"{y:.2f}", fill="black", font=font)
    draw.rectangle([xy(0, hi_y), xy(1, lo_y)], outline="black")
    draw.text((w / 2 - 150, h - 30), "cost (1.0 = always-teacher)", fill="black", font=font)
    draw.text((10, 6), title, fill="black", font=font)
    draw.text((10, top - 22), "verified success", fill="black", font=font)
    colors = {"router": (31, 119, 180), "router + escalation": (44, 160, 44),
              "random": (150, 150, 150), "oracle": (214, 39, 40)}  # fmt: skip
    for name, c in cs.items():
        order = np.argsort(c.cost, kind="stable")
        points = [
            xy(float(x), float(y)) for x, y in zip(c.cost[order], c.success[order], strict=True)
        ]
        draw.line(points, fill=colors[name], width=3 if name == "router" else 2)
    for name, (x, y) in ends.items():
        cx, cy = xy(x, y)
        draw.ellipse([cx - 5, cy - 5, cx + 5, cy + 5], fill="black")
        draw.text((cx - 110 if x > 0.5 else cx + 8, cy + 6), name, fill="black", font=font)
    for i, (name, color) in enumerate(colors.items()):  # legend, bottom right
        y0 = h - bottom - 20 - 20 * (len(colors) - i)
        draw.line([(w - right - 220, y0 + 8), (w - right - 190, y0 + 8)], fill=color, width=3)
        draw.text((w - right - 182, y0), name, fill="black", font=font)
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


@dataclass(frozen=True)
class Scenario:
    name: str
    student: SimCurve
    flat: bool = False


SCENARIOS = (
    Scenario("default: price grows with turns", STUDENT),
    Scenario("flat price per task", STUDENT, flat=True),
    Scenario("stronger student (midpoint 0.65)", replace(STUDENT, midpoint=0.65)),
    Scenario("stronger student, flat price", replace(STUDENT, midpoint=0.65), flat=True),
)


def measure(sc: Scenario, n_train: int, n_test: int, seed: int) -> dict[str, Any]:
    """Fit on `n_train` simulated tasks; every policy's figures on `n_test` held-out ones."""
    train = simulate(n_train, seed=seed, student=sc.student)
    test = simulate(n_test, seed=seed + 1, student=sc.student)
    router = fit(outcomes_of(train), Target.parse("teacher-share=0.5"), seed=seed)
    rows = [task_features(t.task) for t in test]  # once per task, not once per feature
    p = router.model.predict([[row[n] for n in router.features] for row in rows])
    cs, unit = curves(p, test, flat=sc.flat)
    lo = float(min(c.cost.min() for c in cs.values()))  # always-student's cost
    teacher = float(np.mean([t.teacher_passes for t in test]))
    student = float(np.mean([t.student_passes for t in test]))
    areas = {name: area(c, lo, 1.0) for name, c in cs.items()}
    want = TARGET_RETAINED * teacher
    return {
        "scenario": sc.name, "curves": cs, "teacher_usd": unit, "lo": lo,
        "teacher": teacher, "student": student, "areas": areas,
        "at_95": {name: cheapest_at(c, want) for name, c in cs.items()},
        "calibration": router.calibration,
    }  # fmt: skip


def report(m: dict[str, Any]) -> list[str]:
    teacher, lo, areas = m["teacher"], m["lo"], m["areas"]
    cal = m["calibration"]
    lines = [
        f"== {m['scenario']}",
        f"router fit: calibration {cal['method']}, out-of-fold Brier {cal['brier']}, "
        f"ROC AUC {cal['roc_auc']}",
        f"always-teacher: success {teacher:.3f}, cost ${m['teacher_usd']:.2f} (= 1.000); "
        f"always-student: success {m['student']:.3f}, cost {lo:.3f}",
        f"cheapest point reaching {TARGET_RETAINED:.0%} of always-teacher's success "
        f"({TARGET_RETAINED * teacher:.3f}), and area under the frontier vs the oracle's:",
        f"  {'policy':<22}{'teacher share':>14}{'success':>9}{'retained':>10}{'cost':>8}"
        f"{'area':>8}{'vs oracle':>11}",
    ]
    for name, hit in m["at_95"].items():
        a = f"{areas[name]:>8.4f}{areas[name] / areas['oracle']:>11.1%}"
        if hit is None:
            lines.append(f"  {name:<22}{'not reached':>14}{'':>27}{a}")
            continue
        cost, success, share = hit
        lines.append(
            f"  {name:<22}{share:>14.3f}{success:>9.3f}{success / teacher:>10.1%}{cost:>8.3f}{a}"
        )
    oracle = m["at_95"]["oracle"]
    floor = f"; the oracle needs {oracle[0]:.1%}" if oracle else ""
    for name in ("router", "router + escalation"):  # escalation is the router's default
        hit = m["at_95"][name]
        met = hit is not None and hit[0] <= TARGET_COST
        ratio = areas[name] / areas["oracle"]
        got = f"{hit[1] / teacher:.1%} of its success at {hit[0]:.1%} of its cost" if hit else ""
        lines.append(
            f"{name}: target >= {TARGET_RETAINED:.0%} of all-teacher success at <= "
            f"{TARGET_COST:.0%} of its cost: {'met' if met else 'NOT met'} ({got}{floor}); "
            f"target >= {TARGET_AREA:.0%} of the oracle's area: "
            f"{'met' if ratio >= TARGET_AREA else 'NOT met'} ({ratio:.1%})"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Small sets, for CI (seconds).")
    parser.add_argument("--train", type=int, help="Train tasks (default 2000; quick: 400).")
    parser.add_argument("--test", type=int, help="Held-out tasks (default 10000; quick: 1000).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/bench-router"))
    args = parser.parse_args()
    n_train = args.train or (400 if args.quick else 2000)
    n_test = args.test or (1000 if args.quick else 10000)

    started = time.perf_counter()
    print(f"simulated tasks: {n_train} train, {n_test} held out per scenario (seed {args.seed})")
    summary = []
    for i, sc in enumerate(SCENARIOS):
        m = measure(sc, n_train, n_test, args.seed)
        print()
        print("\n".join(report(m)))
        png = args.out / f"router_frontier_{i}.png"
        ends = {
            "always-student": (m["lo"], m["student"]),
            "always-teacher": (1.0, m["teacher"]),
        }
        plot(m["curves"], ends, png, f"{sc.name}: {n_train} train / {n_test} held-out tasks")
        print(f"wrote {png}")
        summary.append({k: v for k, v in m.items() if k != "curves"})
    out = args.out / "router_frontier.json"
    out.write_text(json.dumps(summary, indent=2))
    print(f"\nwrote {out}; {time.perf_counter() - started:.1f} s in all")


if __name__ == "__main__":
    main()
