"""Proof that the loop turns: the student's verified success on held-out coding tasks before and
after `bashgym train` on its own (and a teacher's) verified work, then the held-out tasks routed
between student and teacher by the fitted router, against sending everything to the teacher.

The tasks: a family of small verifiable coding tasks, each with a check command run in the
task's workspace (a file with given content; a Python function with a given result; a JSON file
with a given value; a one-line bug in a module fixed so its test passes, which takes reading
the module first), deterministic from `--seed`, split three ways alike per kind: train,
calibration (what the router learns from) and held-out. Every workspace starts as one template
folder holding the bugs' modules and tests.

The steps, each a real `bashgym` command in a fresh work folder (its bashgym.toml names the
models):
1. before: the student (the embedded Qwen2.5-Coder-0.5B, or `--student-model`) on the held-out
   tasks: verified success (the check passed; the agent's own claim never counts);
2. data: the student, then the teacher, on the train tasks with `-k nemo-jsonl`: only verified
   successes become SFT lines (rejection sampling; a failed check is no training target);
3. train: `bashgym train` (trl: LoRA SFT on CPU, or a GPU when there is one) on both runs' lines;
4. after: the student served with the adapter (`model = "<adapter folder>"`) on the held-out
   tasks: verified success again;
5. routed: the adapted student on the calibration tasks, which it was not trained on (its
   verified outcomes on new work: what the router learns from, as the loop records them after
   each round; on its own train tasks it would pass what it memorized), `bashgym router fit` on
   that run and the teacher's (`--target`), then the held-out tasks with `--router confidence`
   between the adapted student and the teacher: run.json's routing section (cost and success
   against all-teacher).
The teacher is a scripted OpenAI-compatible server on 127.0.0.1 (bashgym_testing) that makes
each task's right tool calls (one write; or a read, then an edit) and stops: a perfect
teacher, priced as `--teacher-model` in litellm's price list. Training needs torch (the trl
plugin's `train` extra): run this with a Python that has it (e.g. a venv with
`pip install torch==2.13.0` and the extra).

    python bench/loop.py [--tasks 24] [--steps 30] [--max-turns 4] [--out DIR] [--json out.json]
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
from typing import Any

HERE = Path(__file__).resolve().parent
KEY_ENV = "BENCH_LOOP_TEACHER_KEY"
WORDS = ["apple", "river", "stone", "cloud", "ember", "maple", "orbit", "pixel", "quartz", "tulip"]


# -- the task family ---------------------------------------------------------------------------


# A one-line bug in a small module, the test that shows it, and the fix: (the module's text with
# the bug, the buggy line, the fixed line, the test's assertion). `{f}` is the function's name,
# `{k}` a number drawn per task. The prompt names neither the bug nor the function: the agent
# has to read the module (or the test) to find it, then edit one line.
BUGS = [
    (
        'def {f}(items):\n    """The sum of the numbers in items."""\n    result = 0\n'
        "    for item in items:\n        result = item\n    return result\n",
        "        result = item\n",
        "        result += item\n",
        "m.{f}([1, 2, {k}]) == {sum}",
    ),
    (
        'def {f}(n):\n    """The numbers 1, 2, ..., n as a list."""\n'
        "    return list(range(1, n))\n",
        "range(1, n)",
        "range(1, n + 1)",
        "m.{f}({k}) == {upto}",
    ),
    (
        'def {f}(items, limit):\n    """The items that are at least limit, in order."""\n'
        "    return [x for x in items if x > limit]\n",
        "x > limit",
        "x >= limit",
        "m.{f}([1, {k}, {k1}], {k}) == [{k}, {k1}]",
    ),
]


SPLITS = ("train", "calibration", "held-out")


def make_tasks(n: int, seed: int) -> list[dict[str, Any]]:
    """`n` tasks, each {id, prompt, check, split, calls, files}: `calls` are the teacher's tool
    calls that solve it, `files` what the workspace must hold before it starts (a bug's module
    and test). Four kinds, each in every split alike (kind (i // 3) % 4, split i % 3):
    a text file, a Python function, a JSON file, a one-line bug fixed so its test passes. The
    first three are one `write_file`; the bug takes reading the module, then `edit_file`."""
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        kind, word, k = (i // 3) % 4, rng.choice(WORDS), rng.randint(2, 9)
        name = f"{word}{i}"
        files: dict[str, str] = {}
        if kind == 0:
            prompt = f"Create a file named {name}.txt that contains exactly the text: {word}"
            check = f'test "$(cat {name}.txt)" = "{word}"'
            calls = [("write_file", {"path": f"{name}.txt", "content": word})]
        elif kind == 1:
            prompt = (
                f"Create a Python file {name}.py with a function add_{k}(x) that returns "
                f"x plus {k}."
            )
            check = f'python3 -c "import {name}; assert {name}.add_{k}(2) == {2 + k}"'
            content = f"def add_{k}(x):\n    return x + {k}\n"
            calls = [("write_file", {"path": f"{name}.py", "content": content})]
        elif kind == 2:
            prompt = (
                f"Create a file named {name}.json holding a JSON object whose key "
                f'"{word}" has the number {k} as its value.'
            )
            check = (
                f"python3 -c \"import json; assert json.load(open('{name}.json')) == "
                f"{{'{word}': {k}}}\""
            )
            calls = [("write_file", {"path": f"{name}.json", "content": json.dumps({word: k})})]
        else:
            source, bad, good, assertion = rng.choice(BUGS)
            values = {"f": f"{word}_{k}", "k": k, "k1": k + 1, "sum": 3 + k}
            values["upto"] = list(range(1, k + 1))
            module, test = f"{name}_lib.py", f"test_{name}.py"
            claim = assertion.format(**values)
            files = {
                module: source.format(**values),
                test: f"import {name}_lib as m\n\nassert {claim}\nprint('ok')\n",
            }
            prompt = (
                f"The test {test} fails. Fix the one-line bug in {module} so that "
                f"`python3 {test}` passes."
            )
            # the check asserts what the test does, without running the test file: an agent
            # that edits the test instead of the bug does not pass
            check = f'python3 -c "import {name}_lib as m; assert {claim}"'
            calls = [
                ("read_file", {"path": module}),
                ("edit_file", {"path": module, "old_text": bad, "new_text": good}),
            ]
        split = SPLITS[i % 3]
        tasks.append(
            {
                "id": f"t{i:03d}",
                "prompt": prompt,
                "check": check,
                "split": split,
                "calls": calls,
                "files": files,
            }
        )
    return tasks


def write_tasks(tasks: list[dict[str, Any]], path: Path) -> Path:
    keep = ("id", "prompt", "check")
    path.write_text("".join(json.dumps({k: t[k] for k in keep}) + "\n" for t in tasks))
    return path


def write_template(tasks: list[dict[str, Any]], folder: Path) -> Path:
    """The folder every task's workspace starts as (`workspace.template`): every bug's module
    and test (one template serves the run; each task's prompt names its own files)."""
    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        for name, text in task["files"].items():
            (folder / name).write_text(text)
    return folder


# -- the perfect teacher -----------------------------------------------------------------------


def start_teacher(tasks: list[dict[str, Any]]) -> Any:
    """The scripted server: the task's tool calls one per turn (the n-th call once n tool
    results are in the conversation), then a one-line summary."""
    from bashgym_testing.server import RecordedRequest, Reply, ScriptedModelServer, ToolUse

    by_prompt = {t["prompt"]: t for t in tasks}

    def answer(request: RecordedRequest) -> Reply:
        text = request.last_user_text
        task = next((t for p, t in by_prompt.items() if p in text), None)
        if task is None:
            return Reply("OK")  # the executor's preflight ("Reply with OK.")
        done = sum(1 for m in request.messages if m.get("role") == "tool")
        if done >= len(task["calls"]):
            return Reply("Done: the task is complete.")
        name, arguments = task["calls"][done]
        return Reply("", tool_calls=[ToolUse(name, arguments)])

    server = ScriptedModelServer().start()
    server.add_rule(lambda r: True, answer)
    return server


# -- running bashgym ---------------------------------------------------------------------------


def bashgym(
    args: list[str], cwd: Path, log: Path, timeout: float, ok: tuple[int, ...] = (0,)
) -> float:
    """Run `bashgym ARGS` with this Python; its output goes to `log`; seconds taken. `ok`: the
    exit codes that are a result (an agent run whose every task failed its check exits 3)."""
    started = time.monotonic()
    env = {**os.environ, KEY_ENV: "bench-key", "PYTHONUNBUFFERED": "1"}
    with log.open("a") as out:
        out.write(f"\n$ bashgym {' '.join(args)}\n")
        out.flush()
        proc = subprocess.run(
            [sys.executable, "-m", "bashgym_cli", *args],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
    took = time.monotonic() - started
    if proc.returncode not in ok:
        raise SystemExit(f"bashgym {args[0]} failed (exit {proc.returncode}); see {log}")
    return took


def settings_file(
    folder: Path,
    teacher_url: str,
    teacher_model: str,
    adapter: Path | None,
    student_model: str | None,
) -> None:
    # a 0.5B student can loop on one reply until max_tokens: a cap and a timeout keep a task
    # to minutes on 2 cores
    student = ['provider = "embedded"', "params = { max_tokens = 256, timeout = 400 }"]
    if adapter is not None:
        student.append(f'model = "{adapter}"')
    elif student_model:
        student.append(f'model = "{student_model}"')
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bashgym.toml").write_text(
        "[models.student]\n" + "\n".join(student) + "\n\n"
        "[models.teacher]\n"
        'provider = "openai-compatible"\n'
        f'model = "{teacher_model}"\n'
        f'endpoint = "{teacher_url}"\n'
        f'api_key_env = "{KEY_ENV}"\n'
    )


def agent_run(
    folder: Path,
    tasks: Path,
    out: Path,
    executor: str,
    args: argparse.Namespace,
    log: Path,
    extra: list[str] | None = None,
) -> float:
    cmd = [
        "run",
        "-s",
        "files",
        "--set",
        f"source.path={tasks}",
        "-x",
        executor,
        "--set",
        f"executor.max_turns={args.max_turns}",
        "--set",
        "executor.temperature=0",
        "--set",
        "executor.model_retries=1",
        "--set",
        f"tasks.task_timeout_s={args.task_timeout}",
        "--set",
        f"workspace.template={args.template}",
        "--plugin",
        str(HERE / "_loop_teacher.py"),
        "-c",
        str(args.concurrency),
        "-k",
        "nemo-jsonl",
        "-k",
        "parquet",
        "--out",
        str(out),
        *(extra or []),
    ]
    return bashgym(cmd, folder, log, args.timeout, ok=(0, 3))


def outcomes(run_dir: Path) -> dict[str, Any]:
    """Verified successes of a run's tasks: a task counts once, verified when any of its
    attempts was (a routed run's escalation is a second attempt at the same task id)."""
    import pandas as pd

    rows = pd.read_parquet(run_dir / "data.parquet").to_dict("records")
    done: dict[str, bool] = {}
    for r in rows:
        done[r["task_id"]] = done.get(r["task_id"], False) or bool(r.get("verified"))
    cost = [r.get("cost_usd") for r in rows]
    return {
        "tasks": len(done),
        "attempts": len(rows),
        "verified": sum(done.values()),
        "rate": round(sum(done.values()) / len(done), 3) if done else None,
        "cost_usd": None if any(c is None for c in cost) else round(sum(cost), 6),
    }


def against(routed: dict[str, Any], teacher: dict[str, Any]) -> dict[str, Any]:
    """The routed run against the teacher on the same tasks, both measured: success retained
    and cost saved, in % (None where a cost is unknown or the teacher passed nothing)."""
    cost, base = routed["cost_usd"], teacher["cost_usd"]
    return {
        "retained_pct": round(100 * routed["verified"] / teacher["verified"], 1)
        if teacher["verified"]
        else None,
        "saved_pct": round(100 * (1 - cost / base), 1) if cost is not None and base else None,
    }


def merged_run(folder: Path, runs: list[Path]) -> Path:
    """One run dir holding the train lines of `runs` (what `bashgym train` reads)."""
    (folder / "nemo-jsonl").mkdir(parents=True, exist_ok=True)
    lines = []
    for run in runs:
        f = run / "nemo-jsonl" / "train.jsonl"
        lines += f.read_text().splitlines() if f.is_file() else []
        v = run / "nemo-jsonl" / "val.jsonl"  # tiny runs: every verified line trains
        lines += v.read_text().splitlines() if v.is_file() else []
    (folder / "nemo-jsonl" / "train.jsonl").write_text("\n".join(lines) + "\n")
    paths = [str(folder / "nemo-jsonl" / "train.jsonl")]
    (folder / "run.json").write_text(json.dumps({"outputs": {"nemo-jsonl": paths}}))
    return folder


def main() -> None:
    from _bytecode import cache_compiled_modules

    cache_compiled_modules()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--tasks",
        type=int,
        default=24,
        help="Tasks in all (a third each: train, calibration, held-out).",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=30, help="Optimizer steps of the LoRA SFT.")
    p.add_argument("--max-turns", type=int, default=4, help="Model calls per task.")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument(
        "--target",
        default="success=0.95",
        help="bashgym router fit --target (the issue's: 95%% of all-teacher success).",
    )
    p.add_argument("--teacher-model", default="gpt-4o", help="Priced as in litellm's list.")
    p.add_argument("--student-model", default=None, help="A GGUF (default: the embedded one).")
    p.add_argument("--timeout", type=float, default=3600, help="Seconds per bashgym command.")
    p.add_argument("--task-timeout", type=float, default=900, help="Seconds per agent task.")
    p.add_argument("--out", type=Path, default=None, help="Work folder (default: a temp one).")
    p.add_argument("--json", type=Path, default=None, help="Also write the figures here.")
    args = p.parse_args()

    root = (args.out or Path(tempfile.mkdtemp(prefix="bench-loop-"))).resolve()
    root.mkdir(parents=True, exist_ok=True)
    log = root / "bench.log"
    tasks = make_tasks(args.tasks, args.seed)
    train = write_tasks([t for t in tasks if t["split"] == "train"], root / "train.jsonl")
    held = write_tasks([t for t in tasks if t["split"] == "held-out"], root / "held.jsonl")
    calib = write_tasks(
        [t for t in tasks if t["split"] == "calibration"], root / "calibration.jsonl"
    )
    args.template = write_template(tasks, root / "template")
    teacher = start_teacher(tasks)
    figures: dict[str, Any] = {
        "tasks": args.tasks,
        "steps": args.steps,
        "seed": args.seed,
        "max_turns": args.max_turns,
        "load_avg": os.getloadavg()[0],
    }
    seconds: dict[str, float] = {}
    try:
        base_dir = root / "base"
        settings_file(
            base_dir, teacher.openai_base_url, args.teacher_model, None, args.student_model
        )
        say(f"work folder {root}; log {log}")
        say("1/5 before: the student on the held-out tasks")
        seconds["before"] = agent_run(base_dir, held, root / "before", "student", args, log)
        figures["before"] = outcomes(root / "before")
        say(f"    {figures['before']}")
        say("2/5 data: the student, then the teacher, on the train tasks")
        seconds["student_train"] = agent_run(
            base_dir, train, root / "train-student", "student", args, log
        )
        seconds["teacher_train"] = agent_run(
            base_dir, train, root / "train-teacher", "teacher", args, log
        )
        figures["train_student"] = outcomes(root / "train-student")
        figures["train_teacher"] = outcomes(root / "train-teacher")
        say(f"    student {figures['train_student']}, teacher {figures['train_teacher']}")
        say(f"3/5 train: bashgym train --trainer trl ({args.steps} steps)")
        data = merged_run(root / "train-data", [root / "train-student", root / "train-teacher"])
        seconds["train"] = bashgym(
            [
                "train",
                str(data),
                "--out",
                str(root / "trained"),
                "--set",
                f"trainer.max_steps={args.steps}",
                "--set",
                "trainer.grad_accum=1",
                # the default 2048: a tool-use line is ~1,060 tokens (the schemas ~900); at
                # 1024 every line lost the answer that ends the turn, and the trained student
                # never stopped (`rows_cut_short` in metrics.json says so now)
                "--set",
                "trainer.save_steps=10",
            ],
            base_dir,
            log,
            args.timeout,
        )
        figures["train"] = json.loads((root / "trained" / "metrics.json").read_text())
        say(f"    loss {figures['train']['first_loss']} -> {figures['train']['final_loss']}")
        adapted = root / "adapted"
        settings_file(
            adapted,
            teacher.openai_base_url,
            args.teacher_model,
            root / "trained" / "adapter",
            args.student_model,
        )
        say("4/5 after: the student with its adapter on the held-out tasks")
        seconds["after"] = agent_run(adapted, held, root / "after", "student", args, log)
        figures["after"] = outcomes(root / "after")
        say(f"    {figures['after']}")
        say("5/5 routed: the adapted student on the calibration tasks (the router's outcomes)")
        seconds["calibration"] = agent_run(
            adapted, calib, root / "calibration", "student", args, log
        )
        figures["calibration"] = outcomes(root / "calibration")
        say(f"    {figures['calibration']}")
        say(f"    bashgym router fit --target {args.target}, then the held-out tasks")
        router_file = root / "router.json"
        bashgym(
            [
                "router",
                "fit",
                str(root / "calibration"),
                str(root / "train-teacher"),
                "--target",
                args.target,
                "--out",
                str(router_file),
                "--teacher",
                "teacher",
            ],
            base_dir,
            log,
            args.timeout,
            ok=(0, 2),  # 2: the fit refused (e.g. every student outcome failed: one class)
        )
        # no router file: the router's prior (threshold 0.5), said in the figures
        figures["router"] = "fitted" if router_file.is_file() else "prior (the fit refused)"
        model = [f"router.model={router_file}"] if router_file.is_file() else []
        seconds["routed"] = agent_run(
            adapted,
            held,
            root / "routed",
            "student",
            args,
            log,
            [
                "--router",
                "confidence",
                "--set",
                "router.student=student",
                "--set",
                "router.teacher=teacher",
                *[x for m in model for x in ("--set", m)],
            ],
        )
        figures["routed"] = json.loads((root / "routed" / "run.json").read_text()).get("routing")
        figures["routed_outcomes"] = outcomes(root / "routed")
        say(f"    {figures['routed_outcomes']}")
        # run.json's all-teacher figures are estimates where the teacher ran only the tasks
        # routed or escalated to it (the harder, dearer ones): here the teacher runs every task
        say("    all-teacher: the teacher on the held-out tasks (the routed run's baseline)")
        seconds["all_teacher"] = agent_run(
            base_dir, held, root / "all-teacher", "teacher", args, log
        )
        figures["all_teacher"] = outcomes(root / "all-teacher")
        figures["routed_vs_all_teacher"] = against(
            figures["routed_outcomes"], figures["all_teacher"]
        )
        say(f"    {figures['all_teacher']}; routed: {figures['routed_vs_all_teacher']}")
    finally:
        teacher.stop()
        figures["seconds"] = {k: round(v, 1) for k, v in seconds.items()}
        text = json.dumps(figures, indent=1, default=str)
        (root / "figures.json").write_text(text)
        if args.json:
            args.json.write_text(text)
    print(text)


def say(text: str) -> None:
    print(f"bench/loop: {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
