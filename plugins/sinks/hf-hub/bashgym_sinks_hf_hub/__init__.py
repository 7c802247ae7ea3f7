"""BashGym sink `hf-hub`: a HuggingFace Hub dataset folder (split data shards and a generated
dataset card) that `datasets.load_dataset` reads as-is; pushed only given a repo id and a token."""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym_sinks_hf_hub.sink import HfHubSink


@hookimpl
def register_sinks(register: Any) -> None:
    register("hf-hub", HfHubSink())


@hookimpl
def register_commands(app: Any) -> None:
    # typer and bashgym_cli only when the CLI builds its commands
    from bashgym_sinks_hf_hub.cli import push_command

    app.command("push")(push_command)
