"""The run store: durable work items in one SQLite file per run dir (`state.db`). A plugin adds
its items, then claims, completes or fails each in a transaction: a killed run resumes with
nothing done twice or lost (a `running` item whose owner is gone is claimable again). The schema
changes only through numbered migrations (as simonw/llm's). Stdlib sqlite3: WAL and `BEGIN
IMMEDIATE` suffice."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, Literal

State = Literal["pending", "running", "done", "failed"]
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = []
LOCK_FILE = "run.lock"  # in a run dir: see `lock_run`
SCRATCH: ContextVar[Path | None] = ContextVar("bashgym_scratch", default=None)  # `scratch_dir`


def migration(fn: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
    MIGRATIONS.append(fn)
    return fn


@migration
def m001_items(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE items (namespace TEXT NOT NULL, key TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0,
            owner TEXT, payload TEXT, result TEXT, error TEXT, created_at REAL NOT NULL,
            started_at REAL, finished_at REAL, PRIMARY KEY (namespace, key))"""
    )
    db.execute("CREATE INDEX items_state ON items (namespace, state)")


def _start_time(pid: int) -> str:
    """The process's start time in ticks (a reused pid is no owner); '' without /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner_token(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_alive(token: str | None) -> bool:
    """True unless `token`'s process is known to be gone (another host's owner counts as
    alive: it cannot be checked, and a live owner must never be taken over)."""
    if not token:
        return False
    host, _, rest = token.partition(":")
    pid_text, _, started = rest.partition(":")
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid_text), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return not started or _start_time(int(pid_text)) == started


def lock_run(run_dir: Path, command: str = "") -> IO[str] | None:
    """Take `run_dir`'s lock, held while the returned file is open; None when another process
    holds it. Why flock: the kernel drops it when its holder dies, kill -9 included, so a dead
    run never keeps its directory; the file says who holds it (pid, host, since, command)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    fh = (run_dir / LOCK_FILE).open("a+", encoding="utf-8")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    since = datetime.now(UTC).isoformat(timespec="seconds")
    fh.truncate(0)
    who = dict(pid=os.getpid(), host=socket.gethostname(), since=since, command=command)
    fh.write(json.dumps(who))
    fh.flush()
    return fh


def lock_holder(run_dir: Path) -> str:
    """Who holds `run_dir`'s lock, in words."""
    try:
        who = json.loads((run_dir / LOCK_FILE).read_text())
        return f"pid {who['pid']} on {who['host']} since {who['since']}: {who['command']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (it has not said who yet)"


def scratch_dir(prefix: str) -> Path:
    """A new folder for a session's temporary files (TMPDIR): in the running run's dir, so a
    resume removes what a killed run left; outside a run, in the system's temp dir."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=SCRATCH.get())).absolute()  # for any cwd


@contextmanager
def run_scratch(folder: Path) -> Iterator[None]:
    """`scratch_dir`s go under `folder` while a run goes: emptied first (the run's lock says
    no one else uses it), removed after."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    token = SCRATCH.set(folder)
    try:
        yield
    finally:
        SCRATCH.reset(token)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class Item:
    namespace: str
    key: str
    state: State
    attempts: int
    owner: str | None
    payload: Any
    result: Any
    error: str | None
    started_at: float | None
    finished_at: float | None


_COLUMNS = "namespace, key, state, attempts, owner, payload, result, error, started_at, finished_at"


def _item(row: tuple[Any, ...]) -> Item:
    payload, result = (json.loads(v) if v is not None else None for v in row[5:7])
    return Item(*row[:5], payload, result, *row[7:])


class RunStore:
    """Work items by (namespace, key); see the module docstring. Safe across threads and
    processes (one connection per store, serialized; SQLite locks across processes)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.owner = owner_token()
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=30000")
        self._migrate()

    def _migrate(self) -> None:
        with self._tx() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL)"
            )
            done = {r[0] for r in db.execute("SELECT name FROM _migrations")}
            for fn in MIGRATIONS:
                if fn.__name__ not in done:
                    fn(db)
                    db.execute("INSERT INTO _migrations VALUES (?, ?)", (fn.__name__, time.time()))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken before reading (BEGIN IMMEDIATE): no lost update."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def add(self, namespace: str, items: Iterable[str | tuple[str, Any]]) -> int:
        """Add items as pending (keys already present are left as they are); returns how many
        were new. An item is a key, or (key, payload) with a JSON-able payload."""
        now = time.time()
        rows = [
            (namespace, it, None, now) if isinstance(it, str)
            else (namespace, it[0], json.dumps(it[1], default=str), now)
            for it in items
        ]  # fmt: skip
        with self._tx() as db:
            before = db.total_changes
            sql = (
                "INSERT OR IGNORE INTO items (namespace, key, payload, created_at) VALUES (?,?,?,?)"
            )
            db.executemany(sql, rows)
            return db.total_changes - before

    def claim(self, namespace: str, key: str | None = None) -> Item | None:
        """Take one pending item (or one whose owner died) for this process, or None."""
        with self._tx() as db:
            where = "namespace = ? AND state IN ('pending', 'running')"
            args: list[Any] = [namespace]
            if key is not None:
                where, args = where + " AND key = ?", [*args, key]
            for k, state, owner in db.execute(
                f"SELECT key, state, owner FROM items WHERE {where} ORDER BY rowid", args
            ):
                if state == "running" and (owner == self.owner or owner_alive(owner)):
                    continue
                db.execute(
                    "UPDATE items SET state = 'running', owner = ?, attempts = attempts + 1, "
                    "started_at = ?, error = NULL WHERE namespace = ? AND key = ?",
                    (self.owner, time.time(), namespace, k),
                )
                return self._get(db, namespace, k)
        return None

    def complete(self, namespace: str, key: str, result: Any = None) -> bool:
        """Mark an item this process holds as done; False if it is not held by this process."""
        return self._finish(namespace, key, "done", result=result)

    def fail(self, namespace: str, key: str, error: str, *, retry: bool = False) -> bool:
        """Mark a held item failed, or back to pending when `retry`."""
        return self._finish(namespace, key, "pending" if retry else "failed", error=error)

    def _finish(
        self, namespace: str, key: str, state: State, result: Any = None, error: str | None = None
    ) -> bool:
        stored = json.dumps(result, default=str) if result is not None else None
        with self._tx() as db:
            cursor = db.execute(
                "UPDATE items SET state = ?, result = ?, error = ?, finished_at = ?, "
                "owner = CASE WHEN ? = 'pending' THEN NULL ELSE owner END "
                "WHERE namespace = ? AND key = ? AND state = 'running' AND owner = ?",
                (state, stored, error, time.time(), state, namespace, key, self.owner),
            )
            return cursor.rowcount == 1

    def _get(self, db: sqlite3.Connection, namespace: str, key: str) -> Item | None:
        sql = f"SELECT {_COLUMNS} FROM items WHERE namespace = ? AND key = ?"
        row = db.execute(sql, (namespace, key)).fetchone()
        return _item(row) if row else None

    def get(self, namespace: str, key: str) -> Item | None:
        with self._lock:
            return self._get(self._db, namespace, key)

    def items(self, namespace: str, state: State | None = None) -> list[Item]:
        sql, args = f"SELECT {_COLUMNS} FROM items WHERE namespace = ?", [namespace]
        if state is not None:
            sql, args = sql + " AND state = ?", [*args, state]
        with self._lock:
            return [_item(r) for r in self._db.execute(sql + " ORDER BY rowid", args)]

    def counts(self, namespace: str) -> dict[str, int]:
        sql = "SELECT state, COUNT(*) FROM items WHERE namespace = ? GROUP BY state"
        with self._lock:
            return dict(self._db.execute(sql, (namespace,)).fetchall())

    def close(self) -> None:
        with self._lock:
            self._db.close()
