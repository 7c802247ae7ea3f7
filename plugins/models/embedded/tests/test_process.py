"""Process handling and request translation, without the model: fast and always run."""

from __future__ import annotations

import json
import sys
import time

import psutil
import pytest
from bashgym_models_embedded.process import (
    ManagedProcess,
    ServerStartError,
    free_port,
    server_env,
    shared,
)

llama_server = pytest.importorskip(
    "bashgym_models_embedded.server", reason="llama-cpp-python (llama_cpp) is not installed"
)


def test_a_server_that_dies_reports_its_log_tail() -> None:
    code = "import sys; print('loading weights'); print('boom: bad magic', file=sys.stderr); " \
        "sys.exit(3)"  # fmt: skip
    proc = ManagedProcess("fake", [sys.executable, "-c", code], "http://127.0.0.1:9/v1/models")
    with pytest.raises(ServerStartError) as info:
        proc.start()
    assert "exited with code 3" in str(info.value) and "boom: bad magic" in str(info.value)
    assert str(proc.log_path) in str(info.value)
    proc.log_path.unlink()


def test_a_server_that_never_answers_times_out_and_is_stopped() -> None:
    cmd = [sys.executable, "-c", "import time; time.sleep(60)"]
    proc = ManagedProcess("mute", cmd, f"http://127.0.0.1:{free_port()}/", start_timeout=1.0)
    with pytest.raises(ServerStartError, match="did not answer"):
        proc.start()
    assert not psutil.pid_exists(proc.pid) or psutil.Process(proc.pid).status() == "zombie"
    proc.log_path.unlink()


def test_shared_server_is_reference_counted() -> None:
    port = free_port()
    cmd = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    made: list[ManagedProcess] = []

    def make() -> ManagedProcess:
        made.append(ManagedProcess("http", cmd, f"http://127.0.0.1:{port}/"))
        return made[-1]

    with shared(("test", port), make) as outer:
        with shared(("test", port), make) as inner:
            assert inner is outer
        assert outer.alive()  # the inner user leaving does not stop it
    assert len(made) == 1
    deadline = time.monotonic() + 5
    while psutil.pid_exists(outer.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not outer.alive()


def test_the_server_keeps_openmps_default_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No wait policy forced on the server (PASSIVE made a quiet machine's tokens 40% slower);
    the user's choice, and the rest of the environment, pass through."""
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv("BASHGYM_PROBE", "kept")
    env = server_env()
    assert "OMP_WAIT_POLICY" not in env and env["BASHGYM_PROBE"] == "kept"
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert server_env()["OMP_WAIT_POLICY"] == "PASSIVE"


def test_the_runtime_starts_its_server_with_that_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """The runtime hands server_env() to the process it starts (caught before it starts)."""
    from bashgym_models_embedded import runtime as embedded

    from bashgym.settings import ModelAlias, Settings

    class Started(Exception):
        pass

    seen: dict = {}

    def fake_process(name, cmd, ready, env=None, start_timeout=0.0):  # type: ignore[no-untyped-def]
        seen["env"] = env
        raise Started

    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")  # a user's choice reaches the server
    monkeypatch.setattr(embedded, "ManagedProcess", fake_process)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with (
        pytest.raises(Started),
        embedded.EmbeddedRuntime().serve(
            ModelAlias(provider="embedded", model=str(gguf)), Settings()
        ),
    ):
        pass
    assert seen["env"]["OMP_WAIT_POLICY"] == "PASSIVE"


def test_openai_messages_become_template_messages() -> None:
    messages = llama_server._messages(
        [
            {"role": "user", "content": [{"type": "text", "text": t} for t in "ab"]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "1", "type": "function",
                                "function": {"name": "ls", "arguments": '{"path": "."}'}}],
            },
        ]
    )  # fmt: skip
    assert messages[0]["content"] == "ab"
    assert messages[1]["content"] == ""
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == {"path": "."}


def test_tool_calls_are_parsed_from_the_qwen_format() -> None:
    text = 'Let me look.\n<tool_call>\n{"name": "ls", "arguments": {"path": "/tmp"}}\n</tool_call>'
    content, calls = llama_server._tool_calls(text)
    assert content == "Let me look."
    assert calls[0]["function"]["name"] == "ls"
    assert json.loads(calls[0]["function"]["arguments"]) == {"path": "/tmp"}
    assert llama_server._tool_calls("plain answer") == ("plain answer", [])


def test_response_formats_become_grammars() -> None:
    assert llama_server._grammar(None) is None
    assert llama_server._grammar({"type": "text"}) is None
    assert "root" in llama_server._grammar({"type": "json_object"})
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    for fmt in (
        {"type": "json_object", "schema": schema},
        {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    ):
        assert '"\\"n\\""' in llama_server._grammar(fmt)
