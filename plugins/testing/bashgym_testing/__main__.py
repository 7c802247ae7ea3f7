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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bashgym_testing",
        description="Serve scripted OpenAI chat-completions and Anthropic Messages answers on "
        "127.0.0.1 until Ctrl-C.",
    )
    parser.add_argument("script", nargs="?", type=Path, help="JSON script (see the module doc)")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(port=args.port)
    try:
        if args.script is not None:
            load(server, json.loads(args.script.read_text()))
    except (OSError, ValueError, TypeError, KeyError) as exc:
        print(f"error: {args.script}: {exc}", file=sys.stderr)
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
