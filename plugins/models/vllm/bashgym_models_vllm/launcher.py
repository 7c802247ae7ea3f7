"""Launch vLLM's OpenAI-compatible server for a hub model id, on a GPU machine.

Why a separate plugin: vLLM is a GPU-only, multi-gigabyte install that most BashGym users never
need; this package costs nothing until used and says plainly what is missing (vLLM, or a GPU)
before anything starts. The child is `bashgym_procs.served.ManagedProcess`: own process
group, death with its parent, TERM then KILL, stopped at exit.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from bashgym_procs import free_port
from bashgym_procs.served import ManagedProcess, ServerStartError
from pydantic import Field

from bashgym.contracts import InputError, Options, Runtime, ServedModel

if TYPE_CHECKING:
    from bashgym.settings import ModelAlias, Settings


class VllmUnavailable(InputError):
    """vLLM cannot run here: not installed, or no GPU."""


class VllmOptions(Options):
    port: int | None = Field(default=None, description="Port on 127.0.0.1 (default: a free one).")
    extra_args: list[str] = Field(
        default_factory=list, description="More `vllm serve` flags, e.g. --max-model-len 8192."
    )
    start_timeout: float = Field(default=900.0, gt=0, description="Seconds to wait (downloads).")
    adapter: str | None = Field(
        default=None,
        description="A PEFT LoRA folder (`bashgym train`'s OUT/adapter) served on the model "
        "with --enable-lora; requests name it as the model.",
    )


LORA_NAME = "adapter"  # the name requests use for the model-with-adapter (--lora-modules)
ADAPTER_META = "bashgym-adapter.json"  # what `bashgym train` writes beside its adapter


def lora_args(adapter: str) -> list[str]:
    """vLLM's flags to serve a PEFT LoRA folder: --enable-lora, --lora-modules NAME=PATH and a
    --max-lora-rank that fits it (vLLM's default, 16, refuses a larger rank at start)."""
    folder = Path(adapter).expanduser()
    config = folder / "adapter_config.json"
    if not config.is_file():
        raise InputError(f"adapter {adapter!r} is not a PEFT folder (no adapter_config.json)")
    try:
        rank = int(json.loads(config.read_text(encoding="utf-8"))["r"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{config} is not a PEFT LoRA config: {exc}") from None
    max_rank = next(r for r in (8, 16, 32, 64, 128, 256, 512) if r >= rank)
    return [
        "--enable-lora", "--lora-modules", f"{LORA_NAME}={folder.resolve()}",
        "--max-lora-rank", str(max_rank),
    ]  # fmt: skip


def adapter_base(adapter: str) -> str | None:
    """The hub id an adapter folder says it was trained on (`hf_base` in bashgym-adapter.json)."""
    meta = Path(adapter).expanduser() / ADAPTER_META
    if not meta.is_file():
        return None
    try:
        base = json.loads(meta.read_text(encoding="utf-8")).get("hf_base")
    except ValueError:
        return None
    return base if isinstance(base, str) else None


def gpu_present() -> bool:
    """Cheap check: a working `nvidia-smi -L` listing a GPU (never imports torch)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        result = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0 and "GPU" in result.stdout


def check_available() -> None:
    """Raise VllmUnavailable naming what is missing and how to fix it."""
    if importlib.util.find_spec("vllm") is None:
        raise VllmUnavailable(
            "vLLM is not installed in this environment; on a machine with an NVIDIA GPU run "
            "`pip install vllm` (or use --engine llama to serve a GGUF on the CPU)"
        )
    if not gpu_present():
        raise VllmUnavailable(
            "no NVIDIA GPU found (`nvidia-smi -L` lists none); vLLM needs one — use "
            "--engine llama to serve a GGUF on the CPU"
        )


def vllm_command(model: str, port: int, extra_args: list[str] | None = None) -> list[str]:
    return [
        sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
        "--host", "127.0.0.1", "--port", str(port), *(extra_args or []),
    ]  # fmt: skip


@contextlib.contextmanager
def launch(model: str, options: VllmOptions | None = None) -> Iterator[ServedModel]:
    """Run vLLM for `model` until the block ends; stop its whole process group after."""
    opts = options or VllmOptions()
    extra = [*opts.extra_args, *(lora_args(opts.adapter) if opts.adapter else [])]
    check_available()
    port = opts.port or free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = ManagedProcess(
        "vllm", vllm_command(model, port, extra), f"{url}/models",
        start_timeout=opts.start_timeout,
    )  # fmt: skip
    try:
        server.start()
    except ServerStartError as exc:
        raise InputError(str(exc)) from None
    try:
        yield ServedModel(base_url=url, model=LORA_NAME if opts.adapter else model)
    finally:
        server.stop(grace=30.0)  # vLLM frees GPU memory on SIGTERM; give it the time


class VllmRuntime(Runtime[VllmOptions]):
    """vLLM's OpenAI-compatible server for a hub model id (GPU machines)."""

    def serve(
        self, alias: ModelAlias, settings: Settings
    ) -> contextlib.AbstractContextManager[ServedModel]:
        # the alias's `adapter` (once the kernel's ModelAlias has the field), or its model
        # naming an adapter folder, whose bashgym-adapter.json names the hub base
        adapter, model = getattr(alias, "adapter", None), alias.model
        if adapter is None and model and (Path(model).expanduser() / ADAPTER_META).is_file():
            adapter, model = model, adapter_base(model)
        if not model:
            raise InputError("the vllm runtime needs a model id (e.g. Qwen/Qwen2.5-Coder-7B)")
        return launch(model, VllmOptions(adapter=adapter) if adapter else None)

    def launch(
        self, model: str, options: VllmOptions | None = None
    ) -> contextlib.AbstractContextManager[ServedModel]:
        """What `bashgym serve --engine vllm` calls; raises InputError when vLLM cannot run."""
        return launch(model, options)

    def check_available(self) -> None:
        check_available()
