"""Every model settings example in README.md works: `bashgym models check` passes on each.

The README's own `[models.claude]` example (`params = { max_retries = 2, ... }`) once failed
every call with a TypeError. Each ```toml block of the README that configures models is written
verbatim as ./bashgym.toml; only the endpoint (through `BASHGYM_MODELS__<ALIAS>__ENDPOINT`,
so the block itself stays untouched) and the key variables (fake values) point at the scripted
server.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from bashgym_models_providers import PROVIDERS

README = Path(__file__).resolve().parents[4] / "README.md"
BLOCK = re.compile(r"^```toml\n(.*?)^```", re.M | re.S)


def settings_examples() -> list[str]:
    """The README's toml blocks that configure model aliases."""
    blocks = BLOCK.findall(README.read_text())
    return [b for b in blocks if re.search(r"^\[models\.", b, re.M)]


EXAMPLES = settings_examples()


def test_the_readme_has_settings_examples() -> None:
    assert len(EXAMPLES) >= 2, "README.md lost its [models.*] examples (or the extractor broke)"


@pytest.mark.parametrize(
    "block", EXAMPLES, ids=[",".join(tomllib.loads(b)["models"]) for b in EXAMPLES]
)
def test_models_check_passes_on_each_readme_example(
    block: str, bashgym_cli: Any, bashgym_env: Any, model_server: Any, monkeypatch: Any
) -> None:
    (bashgym_env.workdir / "bashgym.toml").write_text(block)
    aliases = tomllib.loads(block)["models"]
    keys: dict[str, str] = {}
    for name, alias in aliases.items():
        provider = alias["provider"]
        assert PROVIDERS[provider].runtime is None, f"{name}: a served alias needs a runtime test"
        base = (
            model_server.anthropic_base_url
            if provider == "anthropic"
            else model_server.openai_base_url
        )
        monkeypatch.setenv(f"BASHGYM_MODELS__{name.upper()}__ENDPOINT", base)
        env = alias.get("api_key_env") or PROVIDERS[provider].key_env
        if env:
            keys[alias["model"]] = f"fake-key-for-{name}"
            monkeypatch.setenv(env, keys[alias["model"]])

    result = bashgym_cli("models", "check")

    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert sorted(line.split()[1].rstrip(":") for line in lines) == sorted(aliases)
    assert all(line.startswith("ok") for line in lines), result.stdout
    sent = {(r.model, r.api_key) for r in model_server.completions}
    assert {a["model"] for a in aliases.values()} == {model for model, _ in sent}
    assert all(keys.get(model, key) == key for model, key in sent)
