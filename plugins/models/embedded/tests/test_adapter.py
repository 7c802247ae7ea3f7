"""Serving the student with a LoRA adapter: which adapter and base an alias names, and the
server's command line (the real load through llama.cpp is in bashgym-trainers-trl's tests)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bashgym_models_embedded import ADAPTER_META, MODEL_ID, EmbeddedOptions, find_adapter
from bashgym_models_embedded.process import embedded_command
from bashgym_models_embedded.runtime import EmbeddedRuntime

from bashgym.contracts import InputError, ServedModel
from bashgym.settings import ModelAlias, Settings


def adapter_folder(folder: Path, **meta: object) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter.gguf").write_bytes(b"GGUF")
    (folder / ADAPTER_META).write_text(json.dumps({"gguf": "adapter.gguf", **meta}))
    return folder


def test_an_adapter_folder_names_its_gguf_and_base(tmp_path: Path) -> None:
    own = adapter_folder(tmp_path / "a" / "adapter", base="other", base_gguf="/m/other.gguf")
    found = find_adapter(str(own))
    assert found.gguf == own / "adapter.gguf" and found.base == "/m/other.gguf"
    default = adapter_folder(tmp_path / "b" / "adapter", base=MODEL_ID, base_gguf="/c/x.gguf")
    assert find_adapter(str(default)).base is None  # the embedded default, verified, not a path


def test_what_is_no_adapter_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=ADAPTER_META):
        find_adapter(str(tmp_path / "empty"))
    with pytest.raises(InputError, match="neither an adapter folder"):
        find_adapter(str(tmp_path / "missing"))
    broken = adapter_folder(tmp_path / "c")
    (broken / "adapter.gguf").unlink()
    with pytest.raises(InputError, match=r"adapter\.gguf is missing"):
        find_adapter(str(broken))


def test_the_server_gets_the_lora_flag() -> None:
    base = dict(port=1, model_id="m", threads=1, ctx=256, parallel=1, batch=8)
    assert "--lora" not in embedded_command(Path("m.gguf"), **base)
    cmd = embedded_command(Path("m.gguf"), **base, lora=Path("/a/adapter.gguf"))
    assert cmd[cmd.index("--lora") + 1] == "/a/adapter.gguf"


class Recording(EmbeddedRuntime):
    """Records what serve() asks start() for, instead of starting llama.cpp."""

    def __init__(self) -> None:
        self.asked: list[tuple[str | None, str | None]] = []

    @contextlib.contextmanager
    def start(self, model, settings, options=None) -> Iterator[ServedModel]:  # type: ignore[override]
        self.asked.append((model, options.adapter if options else None))
        yield ServedModel("http://127.0.0.1:9/v1", "m")


def test_an_alias_whose_model_is_an_adapter_folder_serves_base_plus_lora(tmp_path: Path) -> None:
    folder = adapter_folder(tmp_path / "run" / "adapter", base=MODEL_ID)
    runtime = Recording()
    with runtime.serve(ModelAlias(provider="embedded", model=str(folder)), Settings()):
        pass
    with runtime.serve(ModelAlias(provider="embedded"), Settings()):
        pass
    assert runtime.asked == [(None, str(folder)), (None, None)]


def test_start_refuses_a_bad_adapter_before_any_server(tmp_path: Path) -> None:
    options = EmbeddedOptions(adapter=str(tmp_path / "nowhere"))
    with (
        pytest.raises(InputError, match="neither"),
        EmbeddedRuntime().start(None, Settings(), options),
    ):
        pass
