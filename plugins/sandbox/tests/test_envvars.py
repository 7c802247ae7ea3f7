"""The allow-list of environment variables: secret-looking names never pass through a glob."""

from __future__ import annotations

from bashgym_sandbox.envvars import looks_secret, sandbox_env


def test_the_allow_list_keeps_secret_looking_names_out_of_globs() -> None:
    parent = {"PATH": "/bin", "HF_TOKEN": "t", "CI_JOB": "1", "CI_DEPLOY_KEY": "k", "SHELL": "zsh"}
    env = sandbox_env(parent, home="/ws", tmpdir="/t", pass_env=["CI_*", "*"])
    assert env == {
        "PATH": "/bin",
        "CI_JOB": "1",
        "HOME": "/ws",
        "TMPDIR": "/t",
        "SHELL": "/bin/bash",
    }
    assert all(looks_secret(n) for n in ("AWS_REGION", "my_api_key", "SESSION_ID", "GITHUB_X"))
    assert not any(looks_secret(n) for n in ("PATH", "LANG", "LC_ALL", "TERM", "TZ", "LOGNAME"))
