"""A model stuck repeating itself: the same tool calls turn after turn, or one reply looping.

Small local models fall into loops: the embedded model once made the same tool calls until its
turns ran out, and another time filled a whole reply with the same call until `max_tokens`.
Neither ends on its own, and every further turn costs a model call. Both are recognised from the
replies themselves (never from a tool's result, which may legitimately repeat), so the loop can
stop with a status and a reason saying what was repeated.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from bashgym.records import Message, ToolCall

# The end of a text made of one chunk (8 to 200 characters) said at least 4 times in a row.
LOOPING_TEXT = re.compile(r"(.{8,200}?)\1{3,}\s*$", re.S)
TAIL = 2_000  # characters of a reply searched for a looping end


def signature(call: ToolCall) -> str:
    """A call as name and canonical arguments (key order and spacing do not matter)."""
    try:
        args = json.dumps(json.loads(call.arguments or "{}"), sort_keys=True)
    except ValueError:
        args = call.arguments
    return f"{call.name} {args}"


def _shown(sig: str) -> str:
    return sig if len(sig) <= 120 else sig[:117] + "..."


def within_reply(reply: Message, limit: int) -> str | None:
    """Why `reply` repeats itself (one call `limit` or more times, or a text ending in a loop),
    or None."""
    counts = Counter(signature(c) for c in reply.tool_calls)
    if counts:
        sig, n = counts.most_common(1)[0]
        if n >= limit:
            return f"the same tool call {n} times in one reply: {_shown(sig)}"
    match = LOOPING_TEXT.search(reply.content[-TAIL:]) if reply.content else None
    if match is not None:
        chunk = " ".join(match.group(1).split())
        return f"a reply that ends repeating {chunk[:60]!r}"
    return None


def across_turns(replies: Sequence[Message], limit: int) -> str | None:
    """Why the last `limit` replies are one loop (the same tool calls each time), or None."""
    last = [r for r in replies if r.role == "assistant"][-limit:]
    if len(last) < limit or not last[-1].tool_calls:
        return None
    calls = {tuple(signature(c) for c in r.tool_calls) for r in last}
    if len(calls) != 1:
        return None
    shown = "; ".join(_shown(s) for s in next(iter(calls)))
    return f"the same tool call(s) {limit} turns in a row: {shown}"
