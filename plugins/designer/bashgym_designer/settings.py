"""`[designer]`: how BashGym runs DataDesigner's `create()`, a settings table this toolkit owns.

The `datadesigner` runner registers it (`register_settings`), so `[designer]` in bashgym.toml,
`BASHGYM_DESIGNER__*` env vars and a run file's `[designer]` table are validated by this model,
and `bashgym config show` lists it; the kernel knows nothing of DataDesigner.
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from bashgym.records import Limit
from bashgym.settings import Settings, SettingsTable


class DesignerSettings(SettingsTable):
    """DataDesigner batch and retry settings."""

    table: ClassVar[str] = "designer"
    # a resumed run must use the batch size its finished batches were written with
    resume_keys: ClassVar[tuple[str, ...]] = ("buffer_size",)

    buffer_size: int = Field(
        default=50,
        ge=1,
        description="Rows per checkpointed batch: a killed run loses at most the batches in "
        "flight; a resumed run must use the same value (run.json records it).",
    )
    max_concurrent_row_groups: int = Field(
        default=3, ge=1, description="Batches DataDesigner works on at once."
    )
    max_conversation_restarts: int = Field(
        default=5, ge=0, description="Fresh retries of a model call whose answer did not parse."
    )
    rate_limit_give_up_s: Limit = Field(
        default=120.0,
        description="Stop a run whose model answered no request this long (429, refused or "
        "lost connections, 5xx); finished batches are kept, the same command resumes it.",
    )


def designer_settings(settings: Settings) -> DesignerSettings:
    """The `[designer]` table of `settings` (its defaults when loaded without the plugins)."""
    return settings.table(DesignerSettings)
