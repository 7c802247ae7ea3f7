"""`python -m bashgym_testing SCRIPT`: the scripted server in its own process."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import openai


def test_serves_a_script_file_until_terminated(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            {
                "turns": [
                    {"text": "", "tool_calls": [{"name": "Bash", "arguments": {"command": "ls"}}]},
                    {"fault": "status", "code": 503},
                ],
                "rules": [{"match": "ping", "reply": {"text": "pong"}}],
            }
        )
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "bashgym_testing", str(script)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        base = proc.stdout.readline().split()[-1]
        client = openai.OpenAI(base_url=base, api_key="x", max_retries=0)
        ask = [{"role": "user", "content": "ping"}]
        first = client.chat.completions.create(model="m", messages=ask)
        assert first.choices[0].message.tool_calls[0].function.name == "Bash"
        try:
            client.chat.completions.create(model="m", messages=ask)
            raise AssertionError("the scripted 503 did not come")
        except openai.APIStatusError as exc:
            assert exc.status_code == 503
        third = client.chat.completions.create(model="m", messages=ask)
        assert third.choices[0].message.content == "pong"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0


def test_a_bad_script_is_one_line_and_exit_2(tmp_path):
    script = tmp_path / "bad.json"
    script.write_text('{"turn": []}')
    done = subprocess.run(
        [sys.executable, "-m", "bashgym_testing", str(script)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "unknown keys in the script: turn" in done.stderr


def test_a_busy_port_is_one_line_and_exit_2():
    """A port another process holds is a command-line mistake: one line naming the port and
    what to do, exit 2, no OSError traceback."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "bashgym_testing", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"error: port {port} is in use: choose another or leave --port out for a free one"
    )
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_port_out_of_range_is_refused_before_binding():
    done = subprocess.run(
        [sys.executable, "-m", "bashgym_testing", "--port", "70000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "70000 is not a port (0 to 65535)" in done.stderr
