"""Parsed files → one repository graph: names resolved to node ids where the repo defines them.

A name is looked up the way the language would find it, as far as static reading allows:
`self.x` / `this.x` in the enclosing class, then its base classes (resolved first); then the
enclosing definitions, innermost first (nested functions, the module's own top level); then
the file's imports. Python modules are found by exact dotted name, else by a unique dotted
suffix (`import pkg.mod` finds `src/pkg/mod.py`); TS/JS modules by path, then `<path>/index`.
What cannot be resolved (builtins, third-party packages, dynamic attributes) is counted by
edge type in `unresolved` and left out: the graph only holds edges it can stand behind.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bashgym_pipelines_code_graph.model import EDGE_TYPES, Graph, Node
from bashgym_pipelines_code_graph.parsed import ParsedFile, Target

MAX_BASE_DEPTH = 8  # base classes followed when looking a method up


@dataclass
class Resolution:
    """The graph plus what resolution could not place."""

    graph: Graph
    unresolved: Counter[str] = field(default_factory=Counter)
    renamed_modules: list[str] = field(default_factory=list)


def _rehome(parsed: ParsedFile, prefix: str) -> None:
    """Give a file whose module id another file already holds (`a.py` beside `a/__init__.py`,
    `x.ts` beside `x.js`) ids under its path instead, so no node is lost or merged."""
    old = parsed.module_id

    def move(ident: str) -> str:
        return prefix + ident[len(old) :] if ident == old or ident.startswith(old + ".") else ident

    for node in parsed.nodes:
        node.node_id = move(node.node_id)
    parsed.contains = [(move(a), move(b)) for a, b in parsed.contains]
    parsed.refs = [(move(s), k, d, move(c) if c else c) for s, k, d, c in parsed.refs]
    parsed.module_id = prefix


class Resolver:
    def __init__(self, repo: str, files: list[ParsedFile]) -> None:
        self.files = [f for f in files if f.error is None]
        self.result = Resolution(Graph(repo))
        self.nodes: dict[str, Node] = self.result.graph.nodes
        taken: set[str] = set()
        for parsed in self.files:
            if parsed.module_id in taken:
                _rehome(parsed, parsed.file)
                self.result.renamed_modules.append(parsed.file)
            taken.add(parsed.module_id)
            for node in parsed.nodes:
                self.nodes.setdefault(node.node_id, node)
        self.python: set[str] = set()
        self.scripts: set[str] = set()
        self.suffixes: dict[str, list[str]] = {}
        self.defaults: dict[str, Target] = {}
        for parsed in self.files:
            if parsed.language == "python":
                self.python.add(parsed.module_id)
                parts = parsed.module_id.split(".")
                for i in range(1, len(parts)):
                    self.suffixes.setdefault(".".join(parts[i:]), []).append(parsed.module_id)
            else:
                self.scripts.add(parsed.module_id)
                if "default" in parsed.bindings:
                    self.defaults[parsed.module_id] = parsed.bindings["default"]
        self.edges: dict[str, dict[tuple[str, str], None]] = {t: {} for t in EDGE_TYPES}
        self.bases: dict[str, list[str]] = {}
        # The last dotted part of every id: `scope.name` can only be an id when name's last
        # part is one of these (most calls are to builtins or imports: no scope walk for them).
        self.tails = {ident.rpartition(".")[2] for ident in self.nodes}

    # -- lookups ------------------------------------------------------------------------------

    def module(self, language: str, ref: str) -> str | None:
        if language == "python":
            if ref in self.python:
                return ref
            found = self.suffixes.get(ref, [])
            return found[0] if len(found) == 1 else None
        for candidate in (ref, f"{ref}/index"):
            if candidate in self.scripts:
                return candidate
        return None

    def target(self, language: str, target: Target, *, module_fallback: bool) -> str | None:
        """The node an import target names (`module_fallback`: else the module itself)."""
        ref, member = target
        if language == "python":
            full = f"{ref}.{member}" if member and ref else (ref or member)
            if full in self.nodes:
                return full
            parts = full.split(".")
            for i in range(len(parts) - 1, 0, -1):
                mod = self.module(language, ".".join(parts[:i]))
                if mod is None:
                    continue
                candidate = ".".join([mod, *parts[i:]])
                if candidate in self.nodes:
                    return candidate
                return mod if module_fallback else None
            return self.module(language, full) if module_fallback else None
        mod = self.module(language, ref)
        if mod is None:
            return None
        if not member:
            return mod
        head, _, rest = member.partition(".")
        if head == "default" and mod in self.defaults:
            named = self.defaults[mod][1]
            member = f"{named}.{rest}" if rest else named
        candidate = f"{mod}.{member}"
        if candidate in self.nodes:
            return candidate
        return mod if module_fallback else None

    def member(self, cls: str, name: str) -> str | None:
        """`cls.name`, else the first base class (breadth first) that defines it."""
        queue, seen = [cls], {cls}
        for _ in range(MAX_BASE_DEPTH):
            following = []
            for klass in queue:
                candidate = f"{klass}.{name}"
                if candidate in self.nodes:
                    return candidate
                for base in self.bases.get(klass, ()):
                    if base not in seen:
                        seen.add(base)
                        following.append(base)
            if not following:
                return None
            queue = following
        return None

    def reference(self, parsed: ParsedFile, src: str, name: str, cls: str) -> str | None:
        head, _, rest = name.partition(".")
        if head in ("self", "cls", "this"):
            return self.member(cls, rest) if cls and rest else None
        if name.rpartition(".")[2] in self.tails:
            scope, mod = src, parsed.module_id
            while True:
                candidate = f"{scope}.{name}"
                if candidate in self.nodes:
                    return candidate
                if len(scope) <= len(mod):
                    break
                scope = scope.rpartition(".")[0]
        binding = parsed.bindings.get(head)
        if binding is None:
            return None
        ref, member = binding
        member = ".".join(p for p in (member, rest) if p)
        return self.target(parsed.language, (ref, member), module_fallback=False)

    # -- building -----------------------------------------------------------------------------

    def add(self, kind: str, src: str, dst: str | None) -> None:
        if dst is None:
            self.result.unresolved[kind] += 1
        elif dst != src and (src, dst) not in self.edges[kind]:
            self.edges[kind][(src, dst)] = None
            if kind == "inherits":
                self.bases.setdefault(src, []).append(dst)

    def run(self) -> Resolution:
        contains = self.edges["contains"]
        for parsed in self.files:
            for owner, child in parsed.contains:
                if child != owner:
                    contains[(owner, child)] = None  # a repeat keeps its first place
        for parsed in self.files:  # bases first: method lookups follow them
            for src, kind, name, cls in parsed.refs:
                if kind == "inherits":
                    owner = src.rpartition(".")[0]
                    self.add(kind, src, self.reference(parsed, owner, name, cls))
        reference, calls, missed = self.reference, self.edges["calls"], 0
        for parsed in self.files:
            known: dict[tuple[str, str, str], str | None] = {}  # a call repeated in one place
            for src, kind, name, cls in parsed.refs:
                if kind == "calls":
                    key = (src, name, cls)
                    if key in known:
                        found = known[key]
                    else:
                        found = known[key] = reference(parsed, src, name, cls)
                    if found is None:
                        missed += 1
                    elif found != src:
                        calls[(src, found)] = None
            if missed:  # counted before this file's imports, as one at a time would
                self.result.unresolved["calls"] += missed
                missed = 0
            for target in parsed.imports:
                found = self.target(parsed.language, target, module_fallback=True)
                self.add("imports", parsed.module_id, found)
        graph = self.result.graph
        graph.edges = {kind: list(pairs) for kind, pairs in self.edges.items()}
        return self.result


def resolve(repo: str, files: list[ParsedFile]) -> Resolution:
    return Resolver(repo, files).run()
