"""The `embedded` Runtime: serves the offline default model (or any GGUF) on 127.0.0.1.

Why a Runtime: the kernel's model resolver starts it for every alias whose provider is
`embedded` and points DataDesigner / litellm at the ServedModel's base URL, so the main job runs
with no key and no network. Several users in one process share one server (reference counted).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field

from bashgym.contracts import InputError, Options, Runtime, ServedModel
from bashgym_models_embedded.assemble import MODEL_ID, ensure_default_model
from bashgym_models_embedded.process import (
    ManagedProcess,
    embedded_command,
    free_port,
    server_env,
    shared,
)

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
    adapter: str | None = Field(
        default=None,
        description="A LoRA adapter to serve the model with: `bashgym train`'s adapter folder "
        "or a llama.cpp LoRA .gguf.",
    )


ADAPTER_META = "bashgym-adapter.json"  # what `bashgym train` writes beside its adapter


@dataclass(frozen=True)
class Adapter:
    """A llama.cpp LoRA GGUF, and the base GGUF it was trained on (None: the embedded one)."""

    gguf: Path
    base: str | None
    name: str


def is_adapter_folder(path: str | None) -> bool:
    return bool(path) and (Path(str(path)).expanduser() / ADAPTER_META).is_file()


def find_adapter(text: str) -> Adapter:
    """The adapter `text` names: an adapter folder (its bashgym-adapter.json says the GGUF and
    the base) or a LoRA .gguf file (served on the alias's model); InputError otherwise."""
    path = Path(text).expanduser()
    if path.is_dir():
        meta_file = path / ADAPTER_META
        if not meta_file.is_file():
            raise InputError(
                f"adapter {text!r} is a folder without {ADAPTER_META} (`bashgym train` writes "
                "OUT/adapter with one)"
            )
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            gguf = path / str(meta["gguf"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{meta_file} is not an adapter description: {exc}") from None
        if not gguf.is_file():
            raise InputError(f"adapter {text!r} has no llama.cpp GGUF ({gguf.name} is missing)")
        base = meta.get("base_gguf") if meta.get("base") != MODEL_ID else None
        return Adapter(gguf.resolve(), base, path.resolve().parent.name + "/" + path.name)
    if path.suffix == ".gguf" and path.is_file():
        return Adapter(path.resolve(), None, path.stem)
    raise InputError(
        f"adapter {text!r} is neither an adapter folder (`bashgym train`'s OUT/adapter) nor a "
        "llama.cpp LoRA .gguf file"
    )


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
        # the alias's `adapter` (once the kernel's ModelAlias has the field), or its model
        # naming an adapter folder: `model = "runs/x/train-trl/adapter"` serves base + LoRA
        adapter = getattr(alias, "adapter", None)
        model = alias.model
        if adapter is None and is_adapter_folder(model):
            adapter, model = model, None
        if adapter is None:
            return self.start(model, settings)
        return self.start(model, settings, EmbeddedOptions(adapter=adapter))

    @contextlib.contextmanager
    def start(
        self, model: str | None, settings: Settings, options: EmbeddedOptions | None = None
    ) -> Iterator[ServedModel]:
        """Serve `model` (None: the embedded default, or the base an adapter folder names; else
        a .gguf path), with `options.adapter` when set, until the block ends."""
        opts = options or EmbeddedOptions()
        lora = find_adapter(opts.adapter) if opts.adapter else None
        path, model_id = resolve_model(model or (lora.base if lora else None), settings)
        if lora:
            model_id = f"{model_id}+{lora.name}"
        key = ("embedded", str(path), *opts.model_dump(exclude={"start_timeout"}).values())

        def make() -> ManagedProcess:
            port = opts.port or free_port()
            cmd = embedded_command(
                path, port=port, model_id=model_id, threads=opts.threads, ctx=opts.ctx,
                parallel=opts.parallel, batch=opts.batch, lora=lora.gguf if lora else None,
            )  # fmt: skip
            ready = f"http://127.0.0.1:{port}/v1/models"
            return ManagedProcess(
                f"llama.cpp ({model_id})", cmd, ready, env=server_env(),
                start_timeout=opts.start_timeout,
            )  # fmt: skip

        with shared(key, make) as proc:
            base = proc.ready_url.removesuffix("/models")
            yield ServedModel(base_url=base, model=model_id)
