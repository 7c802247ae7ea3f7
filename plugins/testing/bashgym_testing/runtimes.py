"""A model Runtime for tests: it "serves" by pointing at a server the test already started (the
scripted one) and records every start and stop, so a test can see a run start and stop its
local model without a real one."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from bashgym.contracts import Runtime, ServedModel
from bashgym.settings import ModelAlias, Settings


class RecordingRuntime(Runtime):
    """Serves by pointing at `base_url`; `events` lists "start" and "stop" as they happen."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.events: list[str] = []

    @contextmanager
    def serve(self, alias: ModelAlias, settings: Settings) -> Iterator[ServedModel]:
        self.events.append("start")
        try:
            yield ServedModel(base_url=self.base_url, model="fake")
        finally:
            self.events.append("stop")
