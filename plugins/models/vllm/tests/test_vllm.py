"""The vLLM launcher says clearly what is missing, and builds the documented command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bashgym_models_vllm import launcher
from bashgym_models_vllm.launcher import VllmRuntime, VllmUnavailable

from bashgym.contracts import InputError
from bashgym.plugins import PluginHost
from bashgym.settings import ModelAlias, Settings


def test_registered_as_a_runtime() -> None:
    runtime = PluginHost().registry.get("runtimes", "vllm").obj
    assert isinstance(runtime, VllmRuntime)


def test_missing_vllm_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher.importlib.util, "find_spec", lambda name: None)
    with (
        pytest.raises(VllmUnavailable, match=r"vLLM is not installed.*pip install vllm"),
        launcher.launch("Qwen/Qwen2.5-Coder-7B-Instruct"),
    ):
        pass


def test_missing_gpu_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(launcher.shutil, "which", lambda name: None)
    with pytest.raises(VllmUnavailable, match="no NVIDIA GPU"):
        launcher.check_available()
    assert issubclass(VllmUnavailable, InputError)  # the CLI prints it, exit 2, no traceback


def test_alias_without_model_is_refused() -> None:
    with pytest.raises(InputError, match="needs a model id"):
        VllmRuntime().serve(ModelAlias(provider="openai-compatible"), Settings())


def test_command_line() -> None:
    cmd = launcher.vllm_command("org/model", 8123, ["--max-model-len", "4096"])
    assert cmd[1:] == [
        "-m", "vllm.entrypoints.openai.api_server", "--model", "org/model",
        "--host", "127.0.0.1", "--port", "8123", "--max-model-len", "4096",
    ]  # fmt: skip


def peft_folder(folder: Path, rank: int, hf_base: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 16}))
    meta = {"gguf": "adapter.gguf", "hf_base": hf_base}
    (folder / launcher.ADAPTER_META).write_text(json.dumps(meta))
    return folder


def test_an_adapter_is_served_with_enable_lora_and_a_rank_that_fits(tmp_path: Path) -> None:
    folder = peft_folder(tmp_path / "adapter", rank=24)
    args = launcher.lora_args(str(folder))
    assert args == ["--enable-lora", "--lora-modules", f"adapter={folder}", "--max-lora-rank", "32"]
    with pytest.raises(InputError, match="not a PEFT folder"):
        launcher.lora_args(str(tmp_path))


def test_an_alias_naming_an_adapter_folder_serves_its_hub_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = peft_folder(tmp_path / "adapter", rank=8, hf_base="Qwen/Qwen2.5-Coder-0.5B-Instruct")
    assert launcher.adapter_base(str(folder)) == "Qwen/Qwen2.5-Coder-0.5B-Instruct"
    seen: list[list[str]] = []
    monkeypatch.setattr(launcher, "check_available", lambda: seen.append(["checked"]))

    def no_start(self: object) -> None:
        seen.append(list(self.cmd))  # type: ignore[attr-defined]
        raise launcher.ServerStartError("not started in a test")

    monkeypatch.setattr(launcher.ManagedProcess, "start", no_start)
    alias = ModelAlias(provider="openai-compatible", model=str(folder))
    with pytest.raises(InputError, match="not started"), VllmRuntime().serve(alias, Settings()):
        pass
    cmd = seen[1]
    assert cmd[cmd.index("--model") + 1] == "Qwen/Qwen2.5-Coder-0.5B-Instruct"
    assert "--enable-lora" in cmd and f"adapter={folder}" in cmd
    no_base = peft_folder(tmp_path / "other", rank=8)
    with pytest.raises(InputError, match="needs a model id"):
        VllmRuntime().serve(
            ModelAlias(provider="openai-compatible", model=str(no_base)), Settings()
        )
