"""The events tail on its own: lines written in pieces, a torn line, clients that join late or
reconnect from an offset, a slow client that falls behind: every event once, in order."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bashgym_api import tail
from bashgym_api.tail import Hub, at_line_start, parse_lines


def test_parse_lines_keeps_a_partial_line_and_skips_a_torn_one():
    data = b'{"a":1}\n{"b":\n{"c":3}\n{"d"'
    lines, end = parse_lines(data, 100)
    assert [json.loads(t) for _, t in lines] == [{"a": 1}, {"c": 3}]
    assert [o for o, _ in lines] == [108, 122] and end == 122  # the partial `{"d"` waits


def test_clients_get_every_event_once_in_order(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tail, "MAX_QUEUED", 3)  # the slow client falls behind, reads the file
    path = tmp_path / "events.jsonl"
    events = [{"type": "note", "i": i} for i in range(300)]
    done = False

    async def write() -> None:
        nonlocal done
        with path.open("ab") as fh:
            for i, event in enumerate(events):
                line = json.dumps(event).encode() + b"\n"
                if i % 7 == 0:  # half a line now, the rest a poll later
                    fh.write(line[:5])
                    fh.flush()
                    await asyncio.sleep(tail.POLL_S * 1.5)
                    fh.write(line[5:])
                else:
                    fh.write(line)
                if i == 150:
                    fh.write(b'{"type": "torn\n')  # a kill's torn line, closed by a resume
                fh.flush()
                await asyncio.sleep(0.001)
        done = True

    async def read(hub: Hub, offset: int, delay: float = 0.0, slow: float = 0.0) -> list:
        await asyncio.sleep(delay)
        got = []
        async for batch in hub.stream(path, offset, lambda: done):
            got += [(end, json.loads(text)) for end, text in batch]
            await asyncio.sleep(slow)
        return got

    async def main() -> tuple[list, list, list, list]:
        hub = Hub()
        path.write_bytes(b"")
        results = await asyncio.gather(
            write(), read(hub, 0), read(hub, 0, delay=0.3), read(hub, 0, slow=0.05),
            read(hub, 0, delay=1.0),
        )  # fmt: skip
        assert not hub.tails  # the last client gone, the reader stopped
        return results[1:]

    first, late, slow, later = asyncio.run(main())
    for got in (first, late, slow, later):
        assert [e for _, e in got] == events
        assert [o for o, _ in got] == sorted({o for o, _ in got})  # no offset twice
    middle = first[120][0]
    assert at_line_start(path, middle) and not at_line_start(path, middle - 3)

    async def resume() -> list:
        return await read(Hub(), middle)

    assert [e for _, e in asyncio.run(resume())] == events[121:]
