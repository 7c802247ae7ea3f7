"""`python -m bashgym_api.preview_child REQUEST.json`: a pipeline preview as JSON lines.

Run by the server as a child process (a preview calls models and may start the embedded one:
a crash or a hang there must not reach the server). Each line is one message in the shape of
NeMo DataDesigner's preview service: `{"message_type": ..., "message": ...}` with types
`heartbeat` (while generating, every HEARTBEAT_S), `log`, `record` (one generated row, as soon
as DataDesigner hands the rows back), `summary` (requested, generated, dropped by reason) and
`error` (one line). Only these lines go to stdout; anything a library prints goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from bashgym.text import plain

HEARTBEAT_S = 2.0


def main(argv: list[str]) -> int:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # libraries' prints go to stderr, never into the JSON lines
    lock = threading.Lock()

    def say(kind: str, message: Any) -> None:
        with lock:
            out.write(json.dumps({"message_type": kind, "message": message}, default=str) + "\n")
            out.flush()

    try:
        request = json.loads(Path(argv[0]).read_text())
        return run(request, say)
    except Exception as exc:  # noqa: BLE001 -- whatever went wrong is one line for the client
        from bashgym.text import one_line

        say("error", one_line(exc))
        return 1
    finally:
        out.flush()


def run(request: dict[str, Any], say: Any) -> int:
    from bashgym_cli.runs import spec_from_dict
    from bashgym_commands_pipeline import prepare, preview

    from bashgym.contracts import InputError
    from bashgym.plugins import current_host
    from bashgym.runspec import RunConfigError, resolve
    from bashgym.settings import load_settings

    host = current_host()
    settings = load_settings(host.registry.settings_tables)
    try:
        spec = spec_from_dict(request["spec"], where="preview")
        resolved = resolve(spec, host.registry, require_sinks=False, require_seed_source=False)
    except RunConfigError as exc:
        say("error", str(exc))
        return 2
    n = int(request.get("num_records", 5))
    say("log", f"generating {n} rows with pipeline {resolved.pipeline.name}")  # type: ignore[union-attr]
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(stop, say), daemon=True)
    beat.start()
    try:
        with prepare(resolved, host, settings, serve=True) as prepared:
            result = preview(prepared, n)
    except InputError as exc:
        say("error", str(exc))
        return 2
    finally:
        stop.set()
    for row in result.dataset.to_dict(orient="records"):
        say("record", {str(k): plain(v) for k, v in row.items()})
    summary = {"requested": result.requested, "generated": result.generated}
    say("summary", {**summary, "kept": len(result.dataset), "dropped": result.dropped})
    return 0


def _heartbeat(stop: threading.Event, say: Any) -> None:
    while not stop.wait(HEARTBEAT_S):
        say("heartbeat", None)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
