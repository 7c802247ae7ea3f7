"""The request body type every JSON endpoint takes: one JSON object (absent: None)."""

from typing import Annotated, Any

from fastapi import Body

JsonBody = Annotated[dict[str, Any] | None, Body()]
