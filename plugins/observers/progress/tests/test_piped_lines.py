"""Piped or logged, every progress line and run message is one line (QA finding 4).

Off a terminal rich assumes 80 columns and used to hard-wrap a long line there, with trailing
spaces: `[0:10] pipeline: 0/60 done · column task_prompt 21/60, ⏎column quality 0/60 · …`.
The continuation has no `[m:ss]` prefix, so grep and log parsers lose it. These tests run the
real `bashgym` executable with stdout and stderr on pipes and COLUMNS=80, as `| cat` does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

TIMED = re.compile(r"^\[\d+:\d\d\] \S")
# the first words of every line a run prints besides its timed lines; a line starting with
# anything else is the wrapped tail of the line before it
MESSAGES = ("resuming ", "interrupted ", "done ", "no rows kept ", "  ", "note: ", "WARNING")


def bashgym() -> str:
    return shutil.which("bashgym") or str(Path(sys.executable).with_name("bashgym"))


def run_piped(
    args: list[str], workdir: Path, stop_when: Callable[[str], bool] | None, deadline: float = 90
) -> tuple[int, list[str]]:
    """Run `bashgym ARGS` with both streams on one pipe at 80 columns; send it Ctrl-C (SIGINT)
    once a line satisfies `stop_when`. Its exit status and its lines."""
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    proc = subprocess.Popen(
        [bashgym(), *args], cwd=workdir, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    started = time.monotonic()
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        late = time.monotonic() - started > deadline
        if stop_when is not None and (stop_when(lines[-1]) or late):
            proc.send_signal(signal.SIGINT)
            stop_when = None
    return proc.wait(timeout=deadline), lines


def split_lines(lines: list[str]) -> list[str]:
    """The lines that are neither a timed line nor the start of a run's message."""
    return [line for line in lines if line and not TIMED.match(line)
            and not line.startswith(MESSAGES)]  # fmt: skip


def test_an_interrupted_and_resumed_run_keeps_every_line_whole_when_piped(
    scripted_models, bashgym_env
):
    """The tester's run: a pipeline whose timed line lists its columns under way (over 80
    columns), Ctrl-C, then the same command again (the `resuming` line), in a run directory
    whose path alone is over 80 columns."""
    scripted_models.server.latency = 0.3  # slow enough for timed lines with columns under way
    out = bashgym_env.workdir / ("a-run-directory-long-enough-to-pass-eighty-columns-" * 2)
    args = ["run", "-p", "coding-agent-sft", "-n", "60", "-k", "nemo-jsonl", "--out", str(out)]

    def long_tick(line: str) -> bool:  # columns under way, over 80 columns: the case that wrapped
        return "column " in line and len(line) > 80

    code, first = run_piped(args, bashgym_env.workdir, stop_when=long_tick)
    assert code == 130, "\n".join(first)
    ticks = [line for line in first if long_tick(line)]
    assert ticks, first
    # (the scripted models have no price: the line ends `tokens · cost unknown`)
    assert TIMED.match(ticks[0]) and ticks[0].endswith("tokens · cost unknown"), ticks[0]
    interrupted = [line for line in first if line.startswith("interrupted ")]
    assert len(interrupted) == 1 and interrupted[0].endswith("(--fresh starts over)"), first
    assert str(out) in interrupted[0]
    # the step Ctrl-C stopped says so (it said `failed in`), with its count, and only it
    ended = [line for line in first if re.search(r"\] pipeline: (failed|interrupted|done) ", line)]
    assert len(ended) == 1 and re.search(r"interrupted after \d+\.\ds \(\d+ done\)$", ended[0])
    summary = json.loads((out / "run.json").read_text())  # what was asked is known: said
    assert summary["status"] == "interrupted" and summary["counts"]["requested"] == 60

    scripted_models.server.latency = 0.0
    code, second = run_piped(args, bashgym_env.workdir, stop_when=None)
    assert code == 0, "\n".join(second)
    resuming = second[0]
    assert resuming.startswith(f"resuming {out} (attempt 2;"), second
    assert resuming.endswith("finished work is kept"), second

    for line in first + second:
        assert line == line.rstrip(), f"trailing spaces: {line!r}"
    assert not split_lines(first + second), "\n".join(first + second)
