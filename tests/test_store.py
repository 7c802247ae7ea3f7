"""The run store: exactly-once claims, resume after a kill, never taking over a live owner."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

from bashgym.store import MIGRATIONS, RunStore, owner_alive, owner_token


def test_add_claim_complete_fail_and_retry(tmp_path):
    store = RunStore(tmp_path / "state.db")
    assert store.add("tasks", ["a", ("b", {"prompt": "hi"}), "c"]) == 3
    assert store.add("tasks", ["a", "d"]) == 1  # present keys are left as they are
    first = store.claim("tasks")
    assert first is not None and first.key == "a" and first.attempts == 1
    second = store.claim("tasks")
    assert second is not None and second.key == "b" and second.payload == {"prompt": "hi"}
    assert store.complete("tasks", "a", {"rows": 3})
    assert store.fail("tasks", "b", "boom", retry=True)
    assert store.get("tasks", "b").state == "pending"
    again = store.claim("tasks", "b")
    assert again is not None and again.attempts == 2
    assert store.fail("tasks", "b", "boom again")
    assert not store.complete("tasks", "b")  # not held any more: refused
    assert store.get("tasks", "a").result == {"rows": 3}
    assert store.counts("tasks") == {"done": 1, "failed": 1, "pending": 2}
    assert [i.key for i in store.items("tasks", "failed")] == ["b"]
    assert store.items("other") == []


def test_migrations_run_once_and_are_recorded(tmp_path):
    RunStore(tmp_path / "state.db").close()
    RunStore(tmp_path / "state.db").close()
    with sqlite3.connect(tmp_path / "state.db") as db:
        names = [row[0] for row in db.execute("SELECT name FROM _migrations")]
    assert names == [fn.__name__ for fn in MIGRATIONS]


def _holder(db, key: str, then: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import os, sys, time
        from bashgym.store import RunStore
        store = RunStore({str(db)!r})
        print(store.claim("tasks", {key!r}).key, flush=True)
        {then}
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def test_a_live_owner_is_never_taken_over_and_a_dead_ones_items_are(tmp_path):
    db = tmp_path / "state.db"
    store = RunStore(db)
    store.add("tasks", ["live", "dead"])
    live = _holder(db, "live", "time.sleep(60)")
    dead = _holder(db, "dead", "os._exit(9)")  # killed: its claim stays `running`
    try:
        assert live.stdout.readline().strip() == "live"
        assert dead.stdout.readline().strip() == "dead"
        dead.wait()
        assert store.get("tasks", "dead").state == "running"
        assert store.claim("tasks", "live") is None  # its owner still runs
        taken = store.claim("tasks")
        assert taken is not None and taken.key == "dead" and taken.attempts == 2
    finally:
        live.kill()
        live.wait()
    assert store.claim("tasks", "live").key == "live"  # its owner is gone now


def test_owner_tokens_tell_a_reused_pid_apart(tmp_path):
    assert owner_alive(owner_token())
    host, pid, started = owner_token().split(":")
    assert not owner_alive(f"{host}:{pid}:{int(started or 0) + 1}")
    assert owner_alive(f"elsewhere:{pid}:1")  # another host cannot be checked: never taken
    assert not owner_alive(None)
