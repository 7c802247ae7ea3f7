"""Validate exported configs the way `data-designer validate` does, several in one process:
`python plain_validate.py CONFIG HOME [CONFIG HOME ...]`; prints `valid NAME` or
`invalid NAME: why` per config. Run with DISABLE_DATA_DESIGNER_PLUGINS=true."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml
from data_designer.config import DataDesignerConfigBuilder, ModelProvider
from data_designer.interface import DataDesigner
from data_designer.plugins.registry import PluginRegistry


def main(args: list[str]) -> None:
    loaded = sorted(PluginRegistry._plugins)
    print(f"plugins {loaded}")  # none: what a venv with only data-designer has
    for config, home in zip(args[::2], args[1::2], strict=True):
        doc = yaml.safe_load((Path(home) / "model_providers.yaml").read_text())
        providers = [ModelProvider(**p) for p in doc["providers"]]
        try:
            builder = DataDesignerConfigBuilder.from_config(config)
            DataDesigner(model_providers=providers).validate(builder)
        except Exception as exc:  # what the data-designer CLI reports as invalid
            print(f"invalid {Path(config).stem}: {exc}")
        else:
            print(f"valid {Path(config).stem}")


if __name__ == "__main__":
    main(sys.argv[1:])
