"""Model configs for the roles of a pipeline (task writer, solver(s), judge).

Several roles often use one alias at different settings (the same `default` model writes tasks
hot and solutions cool; DPO samples it at two temperatures). DataDesigner refuses two model
configs with one alias, so each distinct (alias, settings) pair after the first gets its own
DataDesigner alias, `<alias>-<role>`. The provider stays the alias name, which is how
`providers_for(run.models, builder.model_configs)` finds the endpoint for it.
"""

from __future__ import annotations

from typing import Any

from bashgym_designer.models import model_config

from bashgym.contracts import InputError, RunContext


def role_models(
    run: RunContext, roles: dict[str, tuple[str, dict[str, Any]]], pipeline: str
) -> tuple[list[Any], dict[str, str]]:
    """`roles` maps role -> (settings alias, params); returns (model configs, role -> alias)."""
    if run.models is None:
        raise InputError(f"{pipeline}: this run has no model session to resolve aliases with")
    configs: list[Any] = []
    by_key: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    aliases: dict[str, str] = {}
    for role, (name, params) in roles.items():
        key = (name, repr(sorted(params.items())))
        if key not in by_key:
            config = model_config(run.models.resolve(name), **params)
            alias = name if name not in taken else f"{name}-{role}"
            if alias != config.alias:
                config = config.model_copy(update={"alias": alias})
            taken.add(alias)
            configs.append(config)
            by_key[key] = alias
        aliases[role] = by_key[key]
    return configs, aliases
