"""Constrained decoding for structured and judge columns, wherever the provider supports it.

DataDesigner asks for JSON only in the prompt (a `<response_schema>` block) and drops the row
when the answer does not parse: a small model loses most rows that way. Most servers can
instead constrain decoding to a JSON schema — llama.cpp (the embedded model) compiles it to a
grammar, vLLM has guided decoding, OpenAI-compatible APIs take `json_schema` — so the answer
parses by construction. DataDesigner sets request parameters per model alias, not per column,
so each such column gets an alias of its own (`<alias>--<column>`): a copy of its alias whose
requests carry the column's schema as `response_format` (through `extra_body`). The copy keeps
the provider, so usage is still reported under the original alias (see `base_alias`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from data_designer.config import DataDesignerConfigBuilder

    from bashgym.contracts import Models

SEPARATOR = "--"
# provider type -> how its requests name a JSON schema; providers not listed get none
# (Anthropic's Messages API has no response_format: its columns keep prompt-only JSON).
FORMATS = {
    "embedded": lambda name, schema: {"type": "json_object", "schema": schema},
    "openai-compatible": lambda name, schema: _json_schema(name, schema),
    "openai": lambda name, schema: _json_schema(name, schema),
    "openrouter": lambda name, schema: _json_schema(name, schema),
    "nvidia": lambda name, schema: _json_schema(name, schema),
}


def _json_schema(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}


def base_alias(alias: str) -> str:
    """The alias a constrained copy was made from (`default--trajectory` -> `default`)."""
    return alias.split(SEPARATOR, 1)[0]


def column_schema(column: Any) -> dict[str, Any] | None:
    """The JSON schema a structured or judge column's answer must match (None for others)."""
    kind = str(getattr(column, "column_type", ""))
    if kind.endswith("llm-structured"):
        fmt = column.output_format
        return fmt if isinstance(fmt, dict) else fmt.model_json_schema()
    if kind.endswith("llm-judge"):
        # DataDesigner's engine: imported after prepare_environment (bashgym_designer.designer)
        from data_designer.engine.column_generators.utils.judge_score_factory import (
            create_judge_response_model,
            create_judge_structured_output_model,
        )

        responses = [create_judge_response_model(score) for score in column.scores]
        return create_judge_structured_output_model(responses).model_json_schema()
    return None


def constrain(builder: DataDesignerConfigBuilder, models: Models) -> list[str]:
    """Point every structured / judge column at a schema-constrained copy of its alias, where
    the alias's provider supports it; returns the columns constrained."""
    configs = {config.alias: config for config in builder.model_configs}
    done = []
    for column in builder.get_column_configs():
        alias = getattr(column, "model_alias", None)
        schema = column_schema(column)
        base = configs.get(alias) if alias else None
        if schema is None or base is None or SEPARATOR in alias:
            continue
        make = FORMATS.get(models.settings.alias(base.provider or alias).provider)
        if make is None:
            continue
        params = base.inference_parameters
        extra = {**(params.extra_body or {}), "response_format": make(column.name, schema)}
        copy = base.model_copy(
            update={
                "alias": f"{alias}{SEPARATOR}{column.name}",
                "inference_parameters": params.model_copy(update={"extra_body": extra}),
            }
        )
        builder.add_model_config(copy)
        column.model_alias = copy.alias
        done.append(column.name)
    return done
