"""Each prompt template compiled once per rendering environment, not once per row.

DataDesigner 0.9 renders a column's prompt for every row through its sandboxed Jinja
environment's `from_string(template)`, which parses and compiles the template anew each time
(Jinja caches only templates loaded by name). On the bench's one-column config that was ~8% of a
run's CPU (py-spy, P=64): the same few templates, compiled thousands of times. Here
`from_string` of DataDesigner's two environments keeps what it compiled, per environment and
per template source, so every row after the first renders the compiled template. Safe because
the environment is the one that compiled it (the same sandbox, filters and allowed references),
a compiled Jinja template renders any number of times from any thread, and a call with its own
globals or template class is passed through as it is.

Installed once per process, before `create()` (the runner does it); should DataDesigner change
these classes, nothing is installed and rows render as before.
"""

from __future__ import annotations

import threading
from typing import Any

MAX_PER_ENVIRONMENT = 64  # distinct templates kept by one environment (a column has one or two)

_lock = threading.Lock()
_installed = False


def install() -> None:
    """Wrap `from_string` of DataDesigner's template environments with a per-environment cache
    (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
        try:  # DataDesigner's engine: imported after prepare_environment (the runner's)
            from data_designer.engine.processing.ginja import environment
        except ImportError:
            return
        for name in ("UserTemplateSandboxEnvironment", "NativeJinjaSandboxEnvironment"):
            cls = getattr(environment, name, None)
            if cls is not None and callable(getattr(cls, "from_string", None)):
                cls.from_string = _cached(cls.from_string)


def _cached(original: Any) -> Any:
    def from_string(self: Any, source: Any, globals: Any = None, template_class: Any = None) -> Any:
        if globals is not None or template_class is not None or not isinstance(source, str):
            return original(self, source, globals, template_class)
        compiled: dict[str, Any] = self.__dict__.setdefault("_bashgym_compiled", {})
        template = compiled.get(source)
        if template is None:  # two threads may both compile it once: either result is right
            template = original(self, source)
            if len(compiled) < MAX_PER_ENVIRONMENT:
                compiled[source] = template
        return template

    from_string._bashgym_cached = True  # type: ignore[attr-defined]
    return from_string
