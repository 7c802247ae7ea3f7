"""Benchmark: the API's events WebSocket under load — many clients on one job while it writes.

Why: a dashboard tab, a CI script and a notebook may all watch one job; each must get every
event, in order, soon after it is written, without the server's memory growing with the log.

Set-up, all real: the API server (`bashgym_api.create_app` under uvicorn) in its own process
over a jobs root; one job whose process is this script in `--writer` mode, appending events to
its events.jsonl through the kernel's EventBus (the path every run's events take), N events at
`--rate` per second; `--clients` WebSocket clients (the `websockets` library) connected to
`/ws/jobs/{id}` before the first event, each reading until the server's end message.

Reported:
- every client received all N events, in order, none twice (checked, not assumed);
- latency per event: a client's receive time minus the event's `at` (written by the writer),
  p50 / p95 / p99 / max over every (client, event); beside it the same figure for a plain
  reader that polls the file directly at the server's poll interval, in this process: the
  difference is what the API adds (JSON framing, fan-out, the socket);
- the server's CPU time while streaming, per event per client (on a shared machine the
  latency figures depend on what else runs; the CPU time much less);
- the server's memory (RSS): idle with its plugins loaded, peak while streaming, and after.

Run: `uv run python bench/api_websocket.py` (100 clients, 10,000 events) or `--quick` for CI
(10 clients, 1,000 events). The clients run in `--procs` processes (asyncio in each), the
direct reader in its own; on a small machine every process shares the same cores, so the
clients' own JSON parsing is part of the latency measured.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from array import array
from pathlib import Path
from typing import Any

SERVER = """
import sys, uvicorn
from pathlib import Path
from bashgym_api import ServerConfig, create_app
uvicorn.run(create_app(ServerConfig(jobs_root=Path(sys.argv[1]))), host="127.0.0.1",
            port=int(sys.argv[2]), log_level="warning", ws="websockets-sansio")
"""


def writer(job_dir: Path, n: int, rate: float) -> None:
    """Wait for `go`, then append `n` Note events ("0", "1", ...) at `rate` per second."""
    from bashgym.events import EventBus, Note

    go = job_dir / "go"
    while not go.exists():
        time.sleep(0.01)
    bus = EventBus(job_dir / "events.jsonl")
    start = time.perf_counter()
    for i in range(n):
        bus.emit(Note(text=str(i)))
        ahead = (i + 1) / rate - (time.perf_counter() - start)
        if ahead > 0:
            time.sleep(ahead)
    bus.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def percentiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    pick = lambda q: values[min(len(values) - 1, int(q * len(values)))]  # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95), "p99": pick(0.99), "max": values[-1]}


async def client(url: str, n: int, latencies: list[float]) -> tuple[bool, str]:
    from websockets.asyncio.client import connect

    got: list[str] = []
    async with connect(url, max_size=None, open_timeout=60) as ws:
        async for raw in ws:
            now = time.time()
            msg = json.loads(raw)
            if msg.get("end"):
                break
            for event in msg["events"]:
                latencies.append(now - event["at"])
                got.append(event["text"])
    ok = got == [str(i) for i in range(n)]
    return ok, "" if ok else f"got {len(got)} events, first wrong at {_first_wrong(got)}"


def _first_wrong(got: list[str]) -> int:
    return next((i for i, t in enumerate(got) if t != str(i)), len(got))


def client_process(url: str, n: int, clients: int, ready: Any, results: Any) -> None:
    """`clients` WebSocket clients on one event loop, in a process of their own (so their JSON
    parsing is not the baseline reader's); sends (ok/why per client, latencies) back."""

    async def run() -> tuple[list[tuple[bool, str]], list[float]]:
        latencies: list[float] = []
        tasks = [asyncio.create_task(client(url, n, latencies)) for _ in range(clients)]
        await asyncio.sleep(0.5)
        ready.put(clients)
        return list(await asyncio.gather(*tasks)), latencies

    outcome, latencies = asyncio.run(run())
    cpu = sum(os.times()[:2])
    results.put((outcome, array("d", latencies).tobytes(), cpu))


def direct_process(path: str, n: int, poll_s: float, ready: Any, results: Any) -> None:
    """The baseline, in its own process: poll the file and parse new lines as the server's
    tail does, without the API."""
    pos, seen, buf, latencies = 0, 0, b"", array("d")
    ready.put(0)
    while seen < n:
        try:
            with open(path, "rb") as fh:
                fh.seek(pos)
                data = fh.read()
        except FileNotFoundError:
            data = b""
        if data:
            now = time.time()
            pos += len(data)
            buf += data
            *lines, buf = buf.split(b"\n")
            for line in lines:
                if line.strip():
                    latencies.append(now - json.loads(line)["at"])
                    seen += 1
        time.sleep(poll_s)
    results.put(latencies.tobytes())


def sample_rss(pid: int, out: list[float], stop: threading.Event) -> None:
    import psutil

    proc = psutil.Process(pid)
    while not stop.is_set():
        out.append(proc.memory_info().rss / 2**20)
        stop.wait(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=2000.0, help="events per second written")
    parser.add_argument("--procs", type=int, default=2, help="client processes")
    parser.add_argument("--quick", action="store_true", help="10 clients, 1,000 events (CI)")
    parser.add_argument(
        "--writer", nargs=3, metavar=("JOB_DIR", "N", "RATE"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.writer:
        writer(Path(args.writer[0]), int(args.writer[1]), float(args.writer[2]))
        return 0
    if args.quick:
        args.clients, args.events = 10, 1000
    import httpx
    import psutil
    from bashgym_api.tail import POLL_S

    tmp = Path(tempfile.mkdtemp(prefix="bashgym-bench-api-"))
    root = tmp / "jobs"
    job_dir = root / "bench-job"
    job_dir.mkdir(parents=True)
    (job_dir / "job.json").write_text(json.dumps({"id": "bench-job", "kind": "run",
                                                  "created_at": time.time()}))  # fmt: skip
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(root), str(port)],
                              start_new_session=True)  # fmt: skip
    feed = subprocess.Popen(
        [sys.executable, __file__, "--writer", str(job_dir), str(args.events), str(args.rate)]
    )
    (job_dir / "launch.json").write_text(json.dumps({"pid": feed.pid, "argv": []}))
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/api/pipelines", timeout=120).status_code == 200:
                    break  # the plugins are loaded: the server's idle memory is what it keeps
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                raise SystemExit("the API server did not start")
            time.sleep(0.2)
        idle = psutil.Process(server.pid).memory_info().rss / 2**20
        rss: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(server.pid, rss, stop), daemon=True)
        sampler.start()

        url = f"ws://127.0.0.1:{port}/ws/jobs/bench-job?offset=0"
        ctx = mp.get_context("spawn")
        ready, results, direct_q = ctx.Queue(), ctx.Queue(), ctx.Queue()
        shares = [args.clients // args.procs + (i < args.clients % args.procs)
                  for i in range(args.procs)]  # fmt: skip
        workers = [ctx.Process(target=client_process, args=(url, args.events, k, ready, results))
                   for k in shares if k]  # fmt: skip
        for w in workers:
            w.start()
        connected = sum(ready.get(timeout=120) for _ in workers)
        assert connected == args.clients
        baseline = ctx.Process(
            target=direct_process,
            args=(str(job_dir / "events.jsonl"), args.events, POLL_S, ready, direct_q),
        )
        baseline.start()
        ready.get(timeout=120)
        server_proc = psutil.Process(server.pid)
        cpu_before = sum(server_proc.cpu_times()[:2])
        started = time.perf_counter()
        (job_dir / "go").write_text("")
        outcome: list[tuple[bool, str]] = []
        latencies = array("d")
        client_cpu = 0.0
        for _ in workers:
            got, raw, used = results.get(timeout=600)
            outcome += got
            latencies.frombytes(raw)
            client_cpu += used
        took = time.perf_counter() - started
        cpu = sum(server_proc.cpu_times()[:2]) - cpu_before
        direct = array("d")
        direct.frombytes(direct_q.get(timeout=600))
        for w in [*workers, baseline]:
            w.join()
        results = outcome
        stop.set()
        sampler.join()
        after = psutil.Process(server.pid).memory_info().rss / 2**20
    finally:
        for proc in (feed, server):
            proc.terminate()
            proc.wait(timeout=15)
    bad = [why for ok, why in results if not ok]
    api, base_line = percentiles(list(latencies)), percentiles(list(direct))
    print(f"{args.clients} clients, {args.events} events written at {args.rate:g}/s "
          f"(poll interval {POLL_S * 1000:.0f} ms); all delivered in {took:.1f} s")  # fmt: skip
    print(f"complete and in order: {args.clients - len(bad)} of {args.clients} clients"
          + (f"; failures: {bad[:3]}" if bad else ""))  # fmt: skip
    print("latency per event, ms      p50     p95     p99     max")
    for name, figures in (("through the API", api), ("file read directly", base_line)):
        print(f"  {name:<22}" + "".join(f"{figures[k] * 1000:8.1f}" for k in figures))
    added = {k: (api[k] - base_line[k]) * 1000 for k in api}
    print("  added by the API      " + "".join(f"{added[k]:8.1f}" for k in added))
    per = cpu / (args.clients * args.events) * 1e6
    print(f"server CPU while streaming: {cpu:.2f} s ({per:.1f} µs per event per client; steadier "
          f"than wall-clock latency on a shared machine); the clients' own: {client_cpu:.2f} s "
          f"in {len(workers)} processes")  # fmt: skip
    print(f"server RSS: idle {idle:.0f} MiB, peak {max(rss or [idle]):.0f} MiB while streaming "
          f"(+{max(rss or [idle]) - idle:.0f}), {after:.0f} MiB after")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
