"""A job's events.jsonl, tailed by byte offset and fanned out to every WebSocket client.

One reader per file (`Tail`) polls it and hands each batch of complete lines, each with the
byte offset where it ends, to every subscribed client's queue. A client that connects with an
offset (0: from the start; a reconnect: the last offset it got) subscribes first, then reads the
file from its offset up to where the reader was at that moment, then takes the queue: nothing
between the two is lost, and a line already sent is never sent again (offsets only grow). A
line without its newline is still being written (or was torn by a kill) and waits; a complete
line that is not JSON (a torn line the bus closed on resume) is skipped.

Why poll and not inotify: one `stat` per file every POLL_S serves any number of clients, works
on every filesystem, and bounds the added latency by POLL_S (measured: bench/api_websocket.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

POLL_S = 0.02
MAX_BATCH = 500  # lines per message sent
MAX_QUEUED = 200  # batches a slow client may owe before it goes back to reading the file

Line = tuple[int, str]  # (byte offset where the line ends, the line's JSON text)


def parse_lines(data: bytes, start: int) -> tuple[list[Line], int]:
    """The complete JSON lines of `data` (read from byte `start`) and the offset after the
    last complete line: a trailing part without a newline is left for the next read."""
    lines: list[Line] = []
    pos = start
    view = memoryview(data)
    begin = 0
    while True:
        end = data.find(b"\n", begin)
        if end < 0:
            break
        raw = bytes(view[begin:end]).strip()
        pos = start + end + 1
        if raw:
            try:
                json.loads(raw)
            except ValueError:  # torn by a kill, then closed by the next attempt's bus
                raw = b""
            if raw:
                lines.append((pos, raw.decode("utf-8", "replace")))
        begin = end + 1
    return lines, pos


def read_from(path: Path, offset: int, until: int | None = None) -> tuple[list[Line], int]:
    """Complete lines of `path` from byte `offset` (up to byte `until`, when given)."""
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read() if until is None else fh.read(max(0, until - offset))
    except FileNotFoundError:
        return [], offset
    return parse_lines(data, offset)


def message(lines: list[Line]) -> str:
    """One WebSocket message: `{"offset": N, "events": [...]}` with N the offset after them."""
    return f'{{"offset":{lines[-1][0]},"events":[{",".join(text for _, text in lines)}]}}'


class Batch(list[Line]):
    """Lines handed out together; their message text is built once, however many clients
    send it (100 clients on a job: one join per batch, not 100)."""

    _text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = message(self)
        return self._text

    @property
    def start(self) -> int:
        """Where its first line ends: a client that has sent up to before it needs all of it."""
        return self[0][0]


@dataclass(eq=False)
class Tail:
    """One file's reader; runs while it has subscribers."""

    path: Path
    pos: int = 0  # every complete line before this offset has been handed out
    queues: set[asyncio.Queue[Batch]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None

    async def run(self) -> None:
        while self.queues:
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size > self.pos:
                lines, self.pos = read_from(self.path, self.pos)
                for batch in _chunks(lines):
                    for queue in list(self.queues):
                        queue.put_nowait(batch)
            await asyncio.sleep(POLL_S)


class Hub:
    """The tails of every file some client watches."""

    def __init__(self) -> None:
        self.tails: dict[Path, Tail] = {}

    def subscribe(self, path: Path) -> tuple[Tail, asyncio.Queue[Batch]]:
        tail = self.tails.get(path)
        if tail is None:
            tail = self.tails[path] = Tail(path, pos=_after_last_newline(path))
        queue: asyncio.Queue[Batch] = asyncio.Queue()
        tail.queues.add(queue)
        if tail.task is None or tail.task.done():
            tail.task = asyncio.create_task(tail.run())
        return tail, queue

    def unsubscribe(self, tail: Tail, queue: asyncio.Queue[Batch]) -> None:
        tail.queues.discard(queue)
        if not tail.queues:
            if tail.task is not None:
                tail.task.cancel()
            self.tails.pop(tail.path, None)

    async def stream(
        self, path: Path, offset: int, finished: Callable[[], bool]
    ) -> AsyncIterator[Batch]:
        """Batches of lines after byte `offset`, in order, until `finished()` says the writer
        is gone and every complete line has been given."""
        sent = offset
        while True:
            tail, queue = self.subscribe(path)
            try:
                caught_up = tail.pos
                for chunk in _chunks(read_from(path, sent, caught_up)[0]):
                    sent = chunk[-1][0]
                    yield chunk
                sent = max(sent, caught_up)
                while True:
                    if queue.qsize() > MAX_QUEUED:
                        break  # too far behind: read the file again from `sent`
                    try:
                        batch = await asyncio.wait_for(queue.get(), 0.5)
                    except TimeoutError:
                        if finished():
                            rest, _ = read_from(path, sent)
                            for chunk in _chunks(rest):
                                yield chunk
                            return
                        continue
                    if batch.start > sent:  # the usual case: all of it is new
                        sent = batch[-1][0]
                        yield batch
                    elif batch[-1][0] > sent:
                        fresh = Batch(line for line in batch if line[0] > sent)
                        sent = fresh[-1][0]
                        yield fresh
            finally:
                self.unsubscribe(tail, queue)


def _chunks(lines: list[Line]) -> list[Batch]:
    return [Batch(lines[i : i + MAX_BATCH]) for i in range(0, len(lines), MAX_BATCH)]


def _after_last_newline(path: Path) -> int:
    """The offset after the file's last newline (0 for none): where a new reader starts."""
    with contextlib.suppress(OSError), path.open("rb") as fh:
        end = fh.seek(0, 2)
        while end > 0:
            start = max(0, end - 65536)
            fh.seek(start)
            cut = fh.read(end - start).rfind(b"\n")
            if cut >= 0:
                return start + cut + 1
            end = start
    return 0


def at_line_start(path: Path, offset: int) -> bool:
    """An offset a client may resume from: 0, or right after a newline within the file."""
    if offset == 0:
        return True
    try:
        with path.open("rb") as fh:
            fh.seek(offset - 1)
            return fh.read(1) == b"\n"
    except OSError:
        return False
