"""The `embedded` Runtime: serves the offline default model (or any GGUF) on 127.0.0.1.

Why a Runtime: the kernel's model resolver starts it for every alias whose provider is
`embedded` and points DataDesigner / litellm at the ServedModel's base URL, so the main job runs
with no key and no network. Several users in one process share one server (reference counted).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from bashgym.contracts import InputError, Options, Runtime, ServedModel
from bashgym_models_embedded.assemble import MODEL_ID, ensure_default_model
from bashgym_models_embedded.process import ManagedProcess, embedded_command, free_port, shared

if TYPE_CHECKING:
    from bashgym.settings import ModelAlias, Settings


class EmbeddedOptions(Options):
    """How the llama.cpp server runs (defaults measured on a 2-core machine)."""

    threads: int = Field(
        default_factory=lambda: os.cpu_count() or 1,
        ge=1,
        description="CPU threads for llama.cpp (all cores by default).",
    )
    ctx: int = Field(default=4096, ge=256, description="Context tokens per slot.")
    parallel: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Parallel slots: requests decoded together in one batch.",
    )
    batch: int = Field(default=512, ge=8, description="Tokens per llama_decode call.")
    port: int | None = Field(default=None, description="Port on 127.0.0.1 (default: a free one).")
    start_timeout: float = Field(default=180.0, gt=0, description="Seconds to wait for it.")


def resolve_model(model: str | None, settings: Settings) -> tuple[Path, str]:
    """(GGUF path, served model id): the verified default, or a GGUF path the user named."""
    if model is None or model == MODEL_ID:
        return ensure_default_model(settings.cache_dir), MODEL_ID
    path = Path(model).expanduser()
    if path.suffix != ".gguf":
        raise InputError(
            f"the embedded runtime serves GGUF files: {model!r} is neither {MODEL_ID!r} nor a "
            "path ending in .gguf (use provider 'vllm' or an endpoint for hub model ids)"
        )
    if not path.is_file():
        raise InputError(f"GGUF file {str(path)!r} does not exist")
    return path.resolve(), path.stem


class EmbeddedRuntime(Runtime[EmbeddedOptions]):
    """The offline default: Qwen2.5-Coder-0.5B-Instruct (or any GGUF) served by llama.cpp."""

    def serve(
        self, alias: ModelAlias, settings: Settings
    ) -> contextlib.AbstractContextManager[ServedModel]:
        return self.start(alias.model, settings)

    @contextlib.contextmanager
    def start(
        self, model: str | None, settings: Settings, options: EmbeddedOptions | None = None
    ) -> Iterator[ServedModel]:
        """Serve `model` (None: the embedded default; else a .gguf path) until the block ends."""
        opts = options or EmbeddedOptions()
        path, model_id = resolve_model(model, settings)
        key = ("embedded", str(path), *opts.model_dump(exclude={"start_timeout"}).values())

        def make() -> ManagedProcess:
            port = opts.port or free_port()
            cmd = embedded_command(
                path, port=port, model_id=model_id, threads=opts.threads, ctx=opts.ctx,
                parallel=opts.parallel, batch=opts.batch,
            )  # fmt: skip
            ready = f"http://127.0.0.1:{port}/v1/models"
            return ManagedProcess(
                f"llama.cpp ({model_id})", cmd, ready, start_timeout=opts.start_timeout
            )

        with shared(key, make) as proc:
            base = proc.ready_url.removesuffix("/models")
            yield ServedModel(base_url=base, model=model_id)
