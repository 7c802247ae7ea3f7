"""`bashgym serve`: a local OpenAI-compatible model server, in the foreground, until Ctrl-C.

Why a command: the same server that runs use internally is handy on its own, to point an agent,
an editor or `curl` at the embedded model, or at a vLLM server on a GPU box, with no key.
"""

from __future__ import annotations

import contextlib
import time
import urllib.request
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from bashgym_cli import fail

from bashgym.contracts import InputError
from bashgym.plugins import current_host
from bashgym.registry import UnknownNameError
from bashgym.settings import SettingsError, load_settings
from bashgym_models_embedded.runtime import EmbeddedOptions, EmbeddedRuntime


class Engine(StrEnum):
    llama = "llama"
    vllm = "vllm"


def serve_command(
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            "-m",
            help="llama: a GGUF file (default: the embedded Qwen2.5-Coder-0.5B-Instruct). "
            "vllm: a Hugging Face model id.",
        ),
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", "-p", help="Port on 127.0.0.1 (default: a free one).")
    ] = None,
    threads: Annotated[
        int | None, typer.Option("--threads", min=1, help="llama: CPU threads (default: all).")
    ] = None,
    ctx: Annotated[
        int, typer.Option("--ctx", min=256, help="Context tokens per request (per slot).")
    ] = 4096,
    parallel: Annotated[
        int,
        typer.Option("--parallel", min=1, help="Requests served at once (llama: batched slots)."),
    ] = 4,
    engine: Annotated[
        Engine, typer.Option("--engine", "-e", help="llama (CPU, GGUF) or vllm (GPU, hub id).")
    ] = Engine.llama,
    adapter: Annotated[
        str | None,
        typer.Option(
            "--adapter",
            help="A LoRA adapter to serve with: `bashgym train`'s OUT/adapter folder (llama: "
            "its GGUF on the base it names; vllm: its PEFT folder), or a LoRA .gguf (llama).",
        ),
    ] = None,
) -> None:
    """Serve a model on 127.0.0.1 with an OpenAI-compatible API until Ctrl-C.

    Prints the base URL (ending in /v1) once the server answers; point any OpenAI client at it.
    The server stops, with all its processes, on Ctrl-C, SIGTERM or when this command dies.

    [bold]Examples[/]

      bashgym serve                          # the embedded default model

      bashgym serve --model ~/models/other.gguf --port 8080 --parallel 2

      bashgym serve --engine vllm \\
        --model Qwen/Qwen2.5-Coder-7B-Instruct           # needs a GPU

      bashgym serve --adapter runs/r1/train-trl/adapter  # the student, trained

      curl http://127.0.0.1:PORT/v1/chat/completions \\
        -H 'content-type: application/json' \\
        -d '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 32}'
    """
    try:
        if engine is Engine.vllm:
            if not model:
                raise InputError("--engine vllm needs --model, a Hugging Face model id")
            try:
                runtime = current_host().registry.get("runtimes", "vllm").obj
            except UnknownNameError:
                raise InputError(
                    "--engine vllm needs the bashgym-models-vllm plugin: "
                    "pip install bashgym-models-vllm"
                ) from None
            extra = ["--max-model-len", str(ctx), "--max-num-seqs", str(parallel)]
            options = runtime.Options(port=port, extra_args=extra, adapter=adapter)
            served = runtime.launch(model, options)
        else:
            fields: dict[str, Any] = {
                "port": port, "ctx": ctx, "parallel": parallel, "adapter": adapter,
            }  # fmt: skip
            if threads:
                fields["threads"] = threads
            if model and Path(model).suffix != ".gguf":
                raise InputError(
                    f"--model {model!r} is not a .gguf file; for hub model ids use --engine vllm"
                )
            served = EmbeddedRuntime().start(model, load_settings(), EmbeddedOptions(**fields))
        with served as handle:
            typer.echo(f"serving {handle.model} at {handle.base_url}  (Ctrl-C to stop)")
            _wait(handle.base_url)
    except (InputError, SettingsError) as exc:
        raise fail(str(exc)) from None
    except RuntimeError as exc:  # the server died or never answered: its log tail is in there
        raise fail(str(exc), code=1) from None
    except KeyboardInterrupt:
        pass
    typer.echo("stopped", err=True)


def _wait(base_url: str) -> None:
    """Block until Ctrl-C; fail if the server stops answering."""
    misses = 0
    while misses < 5:
        time.sleep(2.0)
        try:
            with contextlib.closing(urllib.request.urlopen(f"{base_url}/models", timeout=10)):
                misses = 0
        except OSError:
            misses += 1
    raise RuntimeError(f"the server at {base_url} stopped answering")
