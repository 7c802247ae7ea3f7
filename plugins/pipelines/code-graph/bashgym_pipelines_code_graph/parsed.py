"""What parsing one file yields, before names are resolved across the repository.

A parser sees one file, so a call `helpers.load()` or a base class `Base` is only a name there;
it becomes an edge once every file's definitions are known (`resolve.py`). Keeping this record
small and picklable lets files be parsed in worker processes and only these come back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bashgym_pipelines_code_graph.model import Node

# A reference from inside the file: (node it is made from, "calls" or "inherits", the dotted
# name as written, the enclosing class's id for `self.x` / `this.x`, or "").
Ref = tuple[str, str, str, str]
# Where an imported name points: (module as the import names it, member path within it, or "").
Target = tuple[str, str]


@dataclass(slots=True)
class ParsedFile:
    file: str
    language: str
    module_id: str
    nodes: list[Node] = field(default_factory=list)
    contains: list[tuple[str, str]] = field(default_factory=list)
    refs: list[Ref] = field(default_factory=list)
    bindings: dict[str, Target] = field(default_factory=dict)  # local name -> import target
    imports: list[Target] = field(default_factory=list)  # what the module imports
    error: str | None = None
    # imports made inside a definition: its id -> (name -> import target), seen only there
    # (last, so the positional fields a process hands another stay as they were)
    scoped: dict[str, dict[str, Target]] = field(default_factory=dict)


def failed(file: str, language: str, module_id: str, error: str) -> ParsedFile:
    return ParsedFile(file, language, module_id, error=error)
