"""`python -m bashgym_testing SCRIPT.json`: the scripted model server outside pytest.

For trying a pipeline, an executor or `claude -p` against known answers by hand, and for
benchmarks in their own process. The script file holds the turns to play in order, rules for
answers by prompt, and the latency; with no file, every request gets the built-in answer (a
schema instance for `<response_schema>` prompts, a fenced program for code prompts, else an
echo). Example:

    {"latency": 0.05,
     "turns": [{"text": "Let me look.", "tool_calls": [{"name": "Bash",
                                                       "arguments": {"command": "ls"}}]},
               {"fault": "status", "code": 429},
               {"text": "Done."}],
     "rules": [{"match": "item 3", "reply": {"text": "no json here"}}]}
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from bashgym_testing.server import Fault, Reply, ScriptedModelServer, ToolUse


def turn(doc: dict[str, Any]) -> Reply | Fault:
    """A Reply, or a Fault when the entry names one (`"fault": "status"|"timeout"|...`)."""
    doc = dict(doc)
    kind = doc.pop("fault", None)
    if kind is not None:
        return Fault(kind=kind, **doc)
    calls = [ToolUse(**call) for call in doc.pop("tool_calls", [])]
    return Reply(tool_calls=calls, **doc)


def load(server: ScriptedModelServer, script: dict[str, Any]) -> None:
    unknown = set(script) - {"latency", "turns", "rules"}
    if unknown:
        raise ValueError(f"unknown keys in the script: {', '.join(sorted(unknown))}")
    server.latency = float(script.get("latency", 0.0))
    server.script(*(turn(t) for t in script.get("turns", [])))
    for rule in script.get("rules", []):
        server.add_rule(rule["match"], turn(rule["reply"]))


def bind(server: ScriptedModelServer) -> str | None:
    """Start the server, or say in one line why its port could not be taken.

    A busy or forbidden `--port` is a mistake on the command line, not a bug, so it gets a
    sentence and exit 2 instead of an `OSError` traceback.
    """
    port = server.port
    try:
        server.start()
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return f"port {port} is in use: choose another or leave --port out for a free one"
        reason = exc.strerror or str(exc)
        return f"port {port} cannot be used ({reason}): choose another or leave --port out"
    return None


def port_number(text: str) -> int:
    """An argparse type: a port is 0 (any free one) to 65535, said before binding is tried."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (0 to 65535)")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bashgym_testing",
        description="Serve scripted OpenAI chat-completions and Anthropic Messages answers on "
        "127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("script", nargs="?", type=Path, help="JSON script (see the module doc)")
    parser.add_argument("--port", type=port_number, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(port=args.port)
    try:
        if args.script is not None:
            load(server, json.loads(args.script.read_text()))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        print(f"error: {args.script}: {exc}", file=sys.stderr)
        return 2
    problem = bind(server)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with server:
        print(f"OpenAI:    {server.openai_base_url}", flush=True)
        print(f"Anthropic: {server.anthropic_base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
