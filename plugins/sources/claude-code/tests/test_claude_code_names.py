"""What a transcript's own values may become outside its rows: count names and stderr lines.

Why: an attachment's type is the transcript's to choose, and it used to become a count name
(`source.attachments.<type>`), a key of run.json and a row of the hf-hub card, so a token there
reached both; and each bad line was also logged through Python's logging, which printed the raw
path (a token in a project folder's name) on stderr while the `note:` copy was redacted."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from bashgym_sources_claude_code.source import ClaudeCodeOptions, ClaudeCodeSource

from bashgym.contracts import RunContext
from bashgym.settings import Settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TOKEN = "ghp_" + "R8kq2WmZ4vXb7Nc1Lp9Ty3Hd6Gs0Jf5Ae2Ku"  # shaped like a GitHub token


def _session(folder: Path, name: str, *types: str) -> Path:
    """The minimal transcript, with one attachment line of each of `types` after it."""
    good = (FIXTURES / "minimal_transcript.jsonl").read_bytes()
    session_id = json.loads(good.splitlines()[1])["sessionId"]
    lines = [
        json.dumps({"type": "attachment", "sessionId": session_id, "attachment": {"type": t}})
        for t in types
    ]
    path = folder / name
    path.write_bytes(good + "".join(line + "\n" for line in lines).encode())
    return path


@pytest.mark.parametrize("workers", [1, 2])
def test_unknown_attachment_types_count_under_a_fixed_name(tmp_path, workers):
    folder = tmp_path / "-home-dev-shop"
    folder.mkdir()
    first = _session(folder, "a.jsonl", TOKEN, "nested_memory", TOKEN, "brand_new_kind")
    _session(folder, "b.jsonl", TOKEN)
    run = RunContext(run_dir=tmp_path, settings=Settings())
    options = ClaudeCodeOptions(path=str(tmp_path), workers=workers)
    assert len(list(ClaudeCodeSource().open(options, run))) == 2
    attachments = {k: n for k, n in run.counts.items() if k.startswith("source.attachments.")}
    assert attachments == {"source.attachments.nested_memory": 1, "source.attachments.other": 4}
    # each unknown type noted once a run (with the first file it was seen in), not per session
    assert [n for n in run.notes if "is not known" in n] == [
        f"claude-code: {first}: attachment type {kind!r} is not known: counted as "
        "source.attachments.other"
        for kind in ("brand_new_kind", TOKEN)  # (a session's types come sorted)
    ]


def test_bad_lines_are_noted_not_logged(tmp_path, read, run, caplog, capfd):
    folder = tmp_path / f"-home-dev-{TOKEN}"
    folder.mkdir()
    path = _session(folder, "s.jsonl")
    path.write_bytes(path.read_bytes() + b"{not json\n")
    with caplog.at_level(logging.DEBUG):
        assert len(read(path=str(tmp_path))) == 1
    assert run.counts["source.bad_lines"] == 1
    [note] = run.notes  # (which the event bus redacts)
    assert note.startswith(f"claude-code: {path}:8: invalid JSON")
    assert TOKEN not in caplog.text
    assert TOKEN not in capfd.readouterr().err
