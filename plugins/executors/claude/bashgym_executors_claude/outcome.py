"""How a Claude Code run ended: its `result` object (or its absence) → a WorkerResult status.

The order matters. Permission denials come first: a headless run whose edits were refused
still ends `subtype: success` with "done" as its answer (a known failure of peer orchestrators),
so any denial makes it `denied`, never `success`. Then the limit subtypes, then API errors,
which Claude Code reports as `subtype: success` with `is_error` and `api_error_status`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bashgym.records import Outcome, Status


@dataclass(frozen=True)
class Ending:
    status: Status
    reason: str | None = None
    error_kind: str | None = None

    def outcome(self, num_turns: int | None = None) -> Outcome:
        return Outcome(
            success=self.status == "success",
            error_kind=self.error_kind,
            error_message=self.reason,
            num_turns=num_turns,
        )


def denial_text(denials: list[dict[str, Any]]) -> str:
    """`Write(/x/g.txt), Bash(rm -rf build)`: what was refused, short."""
    parts = []
    for denial in denials[:5]:
        arg = denial.get("tool_input") or {}
        hint = arg.get("file_path") or arg.get("command") or arg.get("path")
        hint = hint if isinstance(hint, str) else json.dumps(arg)[:60]
        parts.append(f"{denial.get('tool_name', '?')}({hint[:60]})")
    more = f" and {len(denials) - 5} more" if len(denials) > 5 else ""
    return ", ".join(parts) + more


def ending(
    result: dict[str, Any] | None,
    *,
    streamed_denials: list[dict[str, Any]] = (),  # type: ignore[assignment]
    exit_code: int | None = None,
    stderr: str = "",
    synthetic: str | None = None,
) -> Ending:
    """The status of a finished process: `result` is its last `result` line, if any."""
    if result is None:
        denials = list(streamed_denials)
        if denials:
            return Ending("denied", f"permission denied: {denial_text(denials)}", "denied")
        tail = " ".join((stderr or synthetic or "").split())[-400:]
        return Ending(
            "error",
            f"claude exited {exit_code} without a result" + (f": {tail}" if tail else ""),
            "crash",
        )
    denials = result.get("permission_denials") or list(streamed_denials)
    errors = "; ".join(str(e) for e in result.get("errors") or [])
    subtype = result.get("subtype")
    if denials:
        return Ending("denied", f"permission denied: {denial_text(denials)}", "permission_denied")
    if subtype == "error_max_turns":
        return Ending("failed", errors or "maximum number of turns reached", "max_turns")
    if subtype == "error_max_budget_usd":
        return Ending("budget", errors or "maximum budget reached", "max_budget")
    if result.get("is_error"):
        status_code = result.get("api_error_status")
        text = " ".join(str(result.get("result") or errors or synthetic or "").split())[:400]
        if status_code:
            return Ending("error", f"API error {status_code}: {text}", "api_error")
        return Ending("error", text or f"claude reported an error ({subtype})", subtype or "error")
    if subtype != "success":
        return Ending("error", errors or f"claude ended with {subtype}", subtype or "error")
    return Ending("success")
