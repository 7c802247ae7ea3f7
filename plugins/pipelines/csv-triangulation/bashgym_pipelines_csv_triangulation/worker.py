"""The warm sandbox worker: the process that runs a teacher's Python, inside the environment.

    python -I -m bashgym_pipelines_csv_triangulation.worker --csv-fd 3 --csv-name sales.csv \
        --scratch DIR

Why a fork server. Starting Python and importing pandas costs about half a second, which is
what a fresh process per run would pay every time. This process pays it once: it imports
pandas, numpy and SciPy, parses the CSV into `df`, and then, for each episode, forks a child
that runs the episode's code cells. A fork shares every loaded page copy-on-write, so a child
starts in milliseconds with `df` already parsed, and whatever the code does to `df`, to
modules or to its working folder dies with the child: the reset between episodes is exact, not
a best effort. This parent runs no model-written code itself, so it stays clean; it relays
each cell to the child and enforces the wall-clock limit, killing the child's process group
when a cell overruns (the next cell gets a fresh child, and is told its variables are gone).

The CSV arrives as an inherited, sealed memfd (`--csv-fd`; see `pool`): the kernel refuses any
write to it, whoever asks, and it needs no path inside the sandbox (bubblewrap's /tmp is private
and the rest of the file system read-only). Each episode folder holds a symlink named like the
CSV to `/proc/self/fd/N`, which is `CSV_PATH`.

Limits, all per cell unless said: CPU seconds (RLIMIT_CPU soft limit, raised as an exception by
SIGXCPU), wall-clock seconds (enforced here), memory (RLIMIT_AS: the child's size at fork plus
`memory_mb`, for the whole episode), file size (RLIMIT_FSIZE, which also caps captured output)
and the size of a submitted answer. The environment around this process (bubblewrap: no
network, read-only file system but the scratch folder, own PID namespace) is the isolation;
these limits keep one bad cell from taking a warm worker down.

A cell's last expression, when it ends with one, is shown as a notebook shows it (its repr),
because that is how models write exploratory code; it is never a submission.

Output capture: the child's stdout and stderr (fds 1 and 2, so subprocesses are captured too)
point at one memfd this parent created, which it reads after each cell, even after killing the
child. The request and reply pipes are private to the child and closed on exec.

Requests and replies are JSON lines on this process's stdin/stdout: `{"op": "open", "limits":
{...}}`, `{"op": "run", "code": "..."}`, `{"op": "close"}`. Standard library, pandas and numpy
only: this module must import nothing from BashGym but the protocol and answer modules.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import ctypes
import importlib
import json
import linecache
import math
import os
import resource
import select
import shutil
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from bashgym_pipelines_csv_triangulation.answers import normalize, type_name
from bashgym_pipelines_csv_triangulation.protocol import HOOK, SUBMIT, clip, extract, marker

MB = 1024 * 1024
DEFAULT_LIMITS = {
    "cpu_s": 10.0,
    "wall_s": 30.0,
    "memory_mb": 1024,
    "file_size_mb": 16,
    "output_limit": 8000,
    "answer_limit": 262_144,
}
PR_SET_PDEATHSIG = 1
REPLY_LIMIT = 4 * MB


class Submitted(BaseException):
    """Ends the cell that called `submit()` (a BaseException: `except Exception` cannot eat it)."""


class CpuLimit(BaseException):
    """The cell used up its CPU seconds (raised from the SIGXCPU handler)."""


# --- the child: one episode ------------------------------------------------------------------


class Episode:
    """Runs in the forked child: one namespace for every cell of one episode."""

    def __init__(self, frame: Any, csv: str | None, limits: dict[str, Any], nonce: str) -> None:
        self.limits, self.nonce = limits, nonce
        self.running = False
        import numpy as np  # loaded already, by Worker.load (see there)
        import pandas as pd

        self.namespace: dict[str, Any] = {
            "__name__": "__main__",
            "pd": pd,
            "np": np,
            "df": frame,
            "CSV_PATH": csv,
            "submit": self.submit,
            "hook": self.hook,
        }

    def submit(self, answer: Any) -> None:
        """Submit the final answer (a number, text, list, dict, Series or DataFrame)."""
        payload = {"answer": normalize(answer)}
        payload["type"] = type_name(payload["answer"])
        self._write(SUBMIT, payload)
        raise Submitted

    def hook(self, value: Any, name: str | None = None) -> Any:
        """Record an intermediate value under `name`; returns `value` unchanged."""
        self._write(HOOK, {"name": name, "value": normalize(value)})
        return value

    def _write(self, kind: str, payload: dict[str, Any]) -> None:
        try:
            line = marker(kind, self.nonce, payload)
        except ValueError:
            raise ValueError(f"{kind}(): the value holds inf or another non-JSON number") from None
        if len(line) > self.limits["answer_limit"]:
            raise ValueError(
                f"{kind}(): the value is {len(line)} bytes as JSON, over the "
                f"{self.limits['answer_limit']}-byte limit; submit a smaller answer"
            )
        sys.stdout.flush()
        sys.stdout.write(line)
        sys.stdout.flush()

    def on_cpu_limit(self, signum: int, frame: Any) -> None:
        if self.running:
            self.running = False
            raise CpuLimit

    def run(self, code: str, cell: int) -> dict[str, Any]:
        name = f"<cell {cell}>"
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        used = _cpu_used()
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        budget = math.ceil(used + float(self.limits["cpu_s"]))
        if hard != resource.RLIM_INFINITY:
            budget = min(budget, hard)
        status, error = "ok", None
        try:
            body, last = _split(code, name)
            resource.setrlimit(resource.RLIMIT_CPU, (budget, hard))
            self.running = True
            exec(body, self.namespace)
            if last is not None:  # a notebook shows its last expression: so does a cell here
                value = eval(last, self.namespace)
                if value is not None:
                    print(repr(value))
        except Submitted:
            pass
        except CpuLimit:
            status, error = "cpu", f"CPU time limit ({self.limits['cpu_s']:g} s) reached"
        except MemoryError:
            status, error = "memory", f"memory limit ({self.limits['memory_mb']} MB) reached"
        except SystemExit as exc:
            status, error = "error", f"exit({exc.code!r}) was called: the cell stopped"
        except BaseException as exc:  # noqa: BLE001 -- the model's own error, shown to it
            status, error = _classify(exc), _traceback(exc)
        finally:
            self.running = False
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
        return {"status": status, "error": error, "cpu_s": round(_cpu_used() - used, 4)}


def _split(code: str, name: str) -> tuple[Any, Any]:
    """The cell compiled without its last statement when that is an expression, and that
    expression compiled apart (None otherwise), so its value can be shown."""
    tree = ast.parse(code, name, "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), name, "eval")
    return compile(tree, name, "exec"), last


def _cpu_used() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _classify(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno == 27:  # EFBIG: RLIMIT_FSIZE
        return "output"
    return "error"


def _traceback(exc: BaseException) -> str:
    """The traceback from the cell down (the worker's own frame left out), cut to its end."""
    tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
    text = "".join(traceback.format_exception(type(exc), exc, tb))
    return text if len(text) <= 3000 else "[...]\n" + text[-3000:]


def _vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _lower(which: int, value: int) -> None:
    """Set soft and hard limit to `value`, or to the hard limit the environment already set
    when that is lower (a process can never raise its hard limit)."""
    hard = resource.getrlimit(which)[1]
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def child_main(episode: Episode, requests: int, replies: int, capture: int) -> None:
    """The forked child: its own process group, dies with the worker, serves cells."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(capture, 1)
    os.dup2(capture, 2)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 -- fd 0, owned by the process
    sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
    signal.signal(signal.SIGXCPU, episode.on_cpu_limit)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    limits = episode.limits
    _lower(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) * MB)
    _lower(resource.RLIMIT_AS, _vm_bytes() + int(limits["memory_mb"]) * MB)
    reader = os.fdopen(requests, "rb")
    while line := reader.readline():
        request = json.loads(line)
        os.ftruncate(capture, 0)
        os.lseek(capture, 0, os.SEEK_SET)
        reply = episode.run(request["code"], int(request.get("cell", 0)))
        os.write(replies, json.dumps(reply).encode() + b"\n")
    os._exit(0)


# --- the worker: loads once, forks an episode child, relays cells -----------------------------


class Worker:
    def __init__(self, csv: str | None, csv_name: str | None, scratch: Path) -> None:
        self.csv, self.scratch = csv, scratch
        self.csv_name = csv_name or (Path(csv).name if csv else None)
        self.frame: Any = None
        self.child: int | None = None
        self.episode_dir: Path | None = None
        self.limits = dict(DEFAULT_LIMITS)
        self.nonce = ""
        self.cells = 0
        self.lost = False  # the episode's child died: its variables are gone
        self.episodes = 0
        self.capture = os.memfd_create("bashgym-capture")  # close-on-exec; dup2 gives 1 and 2

    def load(self, preload: list[str]) -> dict[str, Any]:
        # here, not at the top: a pandas that fails to import is answered to the pool as a
        # worker that is not ready (main), instead of a process that dies before it says why
        import pandas as pd

        started = time.perf_counter()
        failed = []
        for module in preload:
            try:
                importlib.import_module(module)
            except ImportError as exc:
                failed.append(f"{module}: {exc}")
        if self.csv:
            self.frame = pd.read_csv(self.csv)
        shape = list(self.frame.shape) if self.frame is not None else None
        return {
            "ready": True,
            "pid": os.getpid(),
            "shape": shape,
            "preload_failed": failed,
            "load_s": round(time.perf_counter() - started, 3),
        }

    # -- episodes --

    def open(self, limits: dict[str, Any], nonce: str) -> dict[str, Any]:
        self.close()
        self.limits = {**DEFAULT_LIMITS, **limits}
        self.nonce = nonce
        self.episodes += 1
        self.cells = 0
        self.lost = False
        self.episode_dir = self.scratch / f"episode-{self.episodes}"
        shutil.rmtree(self.episode_dir, ignore_errors=True)  # left by a worker that was killed
        self.episode_dir.mkdir(parents=True)
        if self.csv and self.csv_name:
            (self.episode_dir / self.csv_name).symlink_to(self.csv)
        return {"ok": True}

    def _fork(self) -> None:
        assert self.episode_dir is not None
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(requests_w)
                os.close(replies_r)
                os.chdir(self.episode_dir)
                path = str(self.episode_dir / self.csv_name) if self.csv_name else None
                episode = Episode(self.frame, path, self.limits, self.nonce)
                child_main(episode, requests_r, replies_w, self.capture)
            finally:
                os._exit(70)
        os.close(requests_r)
        os.close(replies_w)
        self.child, self.to_child, self.from_child = pid, requests_w, replies_r
        self.pending = bytearray()

    def _kill_child(self) -> int | None:
        """Kill the child's process group; its exit status (None if it was already reaped)."""
        if self.child is None:
            return None
        pid, self.child = self.child, None
        for target in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, 9)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                target()
        status = None
        with contextlib.suppress(ChildProcessError):
            status = os.waitpid(pid, 0)[1]
        for fd in (self.to_child, self.from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        return status

    def run(self, code: str) -> dict[str, Any]:
        if self.episode_dir is None:
            self.open({}, self.nonce or "unset")
        restarted = False
        if self.child is None:
            restarted = self.lost
            self._fork()
        self.cells += 1
        started = time.perf_counter()
        wall = float(self.limits["wall_s"])
        try:
            request = {"code": code, "cell": self.cells}
            os.write(self.to_child, json.dumps(request).encode() + b"\n")
            line = self._reply(time.monotonic() + wall)
        except BrokenPipeError:
            line = None
        elapsed = time.perf_counter() - started
        if line is None or line == b"":
            reply = self._lost(line is None, wall)
        else:
            try:
                reply = json.loads(line)
            except ValueError:
                reply = {"status": "protocol", "error": "the episode's reply was not JSON"}
                self._kill_child()
                self.lost = True
        reply.update(self._output(reply))
        reply.update(wall_s=round(elapsed, 4), restarted=restarted, cell=self.cells)
        return reply

    def _reply(self, deadline: float) -> bytes | None:
        """One reply line from the child; None at the deadline, b"" if the child closed."""
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_child], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.from_child, 65536)
            if not chunk:
                return b""
            self.pending += chunk
            if len(self.pending) > REPLY_LIMIT:
                return b"not json"
        line, _, rest = bytes(self.pending).partition(b"\n")
        self.pending = bytearray(rest)
        return line

    def _lost(self, timed_out: bool, wall: float) -> dict[str, Any]:
        """The child overran the wall clock or died: kill what is left, say why."""
        status = self._kill_child()
        self.lost = True
        if timed_out:
            return {"status": "timeout", "error": f"wall-clock limit ({wall:g} s) reached"}
        if status is not None and os.WIFSIGNALED(status):
            sig = signal.Signals(os.WTERMSIG(status))
            if sig is signal.SIGXCPU:
                return {"status": "cpu", "error": "killed at the CPU time limit"}
            return {"status": "crashed", "error": f"the process was killed by {sig.name}"}
        code = os.WEXITSTATUS(status) if status is not None else "?"
        return {"status": "crashed", "error": f"the process exited with code {code}"}

    def _output(self, reply: dict[str, Any]) -> dict[str, Any]:
        size = os.fstat(self.capture).st_size
        raw = os.pread(self.capture, size, 0).decode("utf-8", errors="replace")
        found = extract(raw, self.nonce)
        text, truncated = clip(found.output, int(self.limits["output_limit"]))
        out: dict[str, Any] = {
            "output": text,
            "truncated": truncated,
            "hooks": found.hooks,
            "submitted": bool(found.submissions),
        }
        if len(found.submissions) > 1:
            out["submitted"] = False
            reply["status"] = "protocol"
            reply["error"] = "submit() was called more than once: an episode has one answer"
        elif found.submissions:
            out["answer"] = found.submissions[0].get("answer")
            out["answer_type"] = found.submissions[0].get("type")
        return out

    def close(self) -> dict[str, Any]:
        self._kill_child()
        if self.episode_dir is not None:
            shutil.rmtree(self.episode_dir, ignore_errors=True)
            self.episode_dir = None
        return {"ok": True}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--csv", default=None, help="CSV file loaded as `df`")
    parser.add_argument("--csv-fd", type=int, default=None, help="an inherited fd of the CSV")
    parser.add_argument("--csv-name", default=None, help="the CSV's file name, for CSV_PATH")
    parser.add_argument("--scratch", required=True, help="writable folder for episode folders")
    parser.add_argument("--preload", default="pandas,numpy,scipy.stats")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    csv = f"/proc/self/fd/{args.csv_fd}" if args.csv_fd is not None else args.csv
    worker = Worker(csv, args.csv_name, Path(args.scratch))
    out = sys.stdout.buffer

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message, default=str).encode() + b"\n")
        out.flush()

    try:
        send(worker.load([m for m in args.preload.split(",") if m]))
    except Exception as exc:  # noqa: BLE001 -- reported to the pool, which names it
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
            op = request.get("op")
            if op == "exit":
                break
            send(handle(worker, op, request))
        except Exception as exc:  # noqa: BLE001 -- answered, so the pool can say what failed
            send({"ok": False, "status": "protocol", "error": f"{type(exc).__name__}: {exc}"})
    worker.close()


def handle(worker: Worker, op: Any, request: dict[str, Any]) -> dict[str, Any]:
    if op == "run":
        return worker.run(str(request.get("code", "")))
    if op == "open":
        return worker.open(dict(request.get("limits") or {}), str(request["nonce"]))
    if op == "close":
        return worker.close()
    return {"ok": False, "error": f"unknown op {op!r}"}


if __name__ == "__main__":
    main()
