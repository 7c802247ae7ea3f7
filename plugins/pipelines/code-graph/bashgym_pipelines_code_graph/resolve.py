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
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from bashgym_pipelines_code_graph.model import EDGE_TYPES, Graph
from bashgym_pipelines_code_graph.parsed import ParsedFile, Target

MAX_BASE_DEPTH = 8  # base classes followed when looking a method up


@dataclass
class Resolution:
    """The graph plus what resolution could not place."""

    graph: Graph
    unresolved: Counter[str] = field(default_factory=Counter)
    renamed_modules: list[str] = field(default_factory=list)


def rehome(parsed: ParsedFile, prefix: str) -> None:
    """Give a file whose module id another file already holds (`a.py` beside `a/__init__.py`,
    `x.ts` beside `x.js`) ids under its path instead, so no node is lost or merged."""
    old = parsed.module_id

    def move(ident: str) -> str:
        return prefix + ident[len(old) :] if ident == old or ident.startswith(old + ".") else ident

    for node in parsed.nodes:
        node.node_id = move(node.node_id)
    parsed.contains = [(move(a), move(b)) for a, b in parsed.contains]
    parsed.refs = [(move(s), k, d, move(c) if c else c) for s, k, d, c in parsed.refs]
    parsed.scoped = {move(owner): names for owner, names in parsed.scoped.items()}
    parsed.module_id = prefix


# A module as the index knows it: (module id, language, what a TS/JS `export default` names).
Module = tuple[str, str, Target | None]


def modules_of(files: Iterable[ParsedFile]) -> list[Module]:
    return [(f.module_id, f.language, f.bindings.get("default")) for f in files]


@dataclass
class Index:
    """Everything one file's references are looked up against: the repository's node ids and
    modules, and the base classes the inherits pass found.

    Apart from the files themselves, so a parse worker can build one from the ids and modules
    it is sent, and resolve the calls and imports of the files it parsed: their references
    (most of what parsing yields after the nodes) then never cross between processes. `ids` is
    any container of every node id: the graph's own node dict in the calling process."""

    ids: Collection[str]
    python: set[str] = field(default_factory=set)
    scripts: set[str] = field(default_factory=set)
    suffixes: dict[str, list[str]] = field(default_factory=dict)
    defaults: dict[str, Target] = field(default_factory=dict)
    bases: dict[str, list[str]] = field(default_factory=dict)
    # The last dotted part of every id: `scope.name` can only be an id when name's last part
    # is one of these (most calls are to builtins or imports: no scope walk for them).
    tails: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, ids: Collection[str], modules: Iterable[Module]) -> Index:
        index = cls(ids, tails={ident.rpartition(".")[2] for ident in ids})
        for module_id, language, default in modules:
            if language == "python":
                index.python.add(module_id)
                parts = module_id.split(".")
                for i in range(1, len(parts)):
                    index.suffixes.setdefault(".".join(parts[i:]), []).append(module_id)
            else:
                index.scripts.add(module_id)
                if default is not None:
                    index.defaults[module_id] = default
        return index

    def module(self, language: str, ref: str) -> str | None:
        if language == "python":
            if ref in self.python:
                return ref
            if ref.startswith("src.") and ref[4:] in self.python:  # src layout, named whole
                return ref[4:]
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
            if full in self.ids:
                return full
            parts = full.split(".")
            for i in range(len(parts) - 1, 0, -1):
                mod = self.module(language, ".".join(parts[:i]))
                if mod is None:
                    continue
                candidate = ".".join([mod, *parts[i:]])
                if candidate in self.ids:
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
        if candidate in self.ids:
            return candidate
        return mod if module_fallback else None

    def member(self, cls: str, name: str) -> str | None:
        """`cls.name`, else the first base class (breadth first) that defines it."""
        queue, seen = [cls], {cls}
        for _ in range(MAX_BASE_DEPTH):
            following = []
            for klass in queue:
                candidate = f"{klass}.{name}"
                if candidate in self.ids:
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
        """Python's order: the enclosing definitions innermost first (what each defines or
        imports), where a class body is no scope for the methods inside it; then the module."""
        head, _, rest = name.partition(".")
        if head in ("self", "cls", "this"):
            return self.member(cls, rest) if cls and rest else None
        mod = parsed.module_id
        local = bool(parsed.scoped)
        if local or name.rpartition(".")[2] in self.tails:
            scope = src
            while True:
                candidate = f"{scope}.{name}"
                if (scope != cls or scope == src) and candidate in self.ids:
                    return candidate
                if len(scope) <= len(mod):
                    break
                bound = parsed.scoped.get(scope) if local else None
                if bound is not None and head in bound:
                    ref, member = bound[head]
                    member = ".".join(p for p in (member, rest) if p)
                    return self.target(parsed.language, (ref, member), module_fallback=False)
                scope = scope.rpartition(".")[0]
        binding = parsed.bindings.get(head)
        if binding is None:
            return None
        ref, member = binding
        member = ".".join(p for p in (member, rest) if p)
        return self.target(parsed.language, (ref, member), module_fallback=False)


@dataclass
class Found:
    """What some files' calls and imports resolved to, in file order: edges each kept once at
    its first place, and the references left unresolved, counted in the order met. Found for
    consecutive runs of files merge into exactly what one pass over them all gives."""

    calls: dict[tuple[str, str], None] = field(default_factory=dict)
    imports: dict[tuple[str, str], None] = field(default_factory=dict)
    unresolved: Counter[str] = field(default_factory=Counter)


def resolve_references(index: Index, files: Iterable[ParsedFile]) -> Found:
    """The calls and imports of `files` (the inherits pass has filled `index.bases`)."""
    found = Found()
    reference, calls, imports = index.reference, found.calls, found.imports
    unresolved, missed = found.unresolved, 0
    for parsed in files:
        known: dict[tuple[str, str, str], str | None] = {}  # a call repeated in one place
        for src, kind, name, cls in parsed.refs:
            if kind == "calls":
                key = (src, name, cls)
                if key in known:
                    dst = known[key]
                else:
                    dst = known[key] = reference(parsed, src, name, cls)
                if dst is None:
                    missed += 1
                elif dst != src:
                    calls[(src, dst)] = None
        if missed:  # counted before this file's imports, as one at a time would
            unresolved["calls"] += missed
            missed = 0
        src = parsed.module_id
        for target in parsed.imports:
            dst = index.target(parsed.language, target, module_fallback=True)
            if dst is None:
                unresolved["imports"] += 1
            elif dst != src:
                imports[(src, dst)] = None
    return found


class Resolver:
    """One repository's resolution: its files' nodes and `contains` edges, the base classes
    (inherits, resolved first: method lookups follow them), then every file's `Found` merged
    in file order. `resolve` does it all in one process; a build spread over processes hands
    the index to its workers and merges what each sends back (`build.py`)."""

    def __init__(self, repo: str, files: list[ParsedFile]) -> None:
        self.files = [f for f in files if f.error is None]
        self.result = Resolution(Graph(repo))
        nodes = self.result.graph.nodes
        taken: set[str] = set()
        for parsed in self.files:
            if parsed.module_id in taken:
                rehome(parsed, parsed.file)
                self.result.renamed_modules.append(parsed.file)
            taken.add(parsed.module_id)
            for node in parsed.nodes:
                nodes.setdefault(node.node_id, node)
        self.modules = modules_of(self.files)
        self.index = Index.of(nodes, self.modules)
        self.edges: dict[str, dict[tuple[str, str], None]] = {t: {} for t in EDGE_TYPES}

    def structure(self) -> None:
        """The `contains` edges, then `inherits` (filling the index's base classes)."""
        contains = self.edges["contains"]
        for parsed in self.files:
            for owner, child in parsed.contains:
                if child != owner:
                    contains[(owner, child)] = None  # a repeat keeps its first place
        inherits, bases, unresolved = self.edges["inherits"], self.index.bases, 0
        for parsed in self.files:
            for src, kind, name, cls in parsed.refs:
                if kind == "inherits":
                    owner = src.rpartition(".")[0]
                    dst = self.index.reference(parsed, owner, name, cls)
                    if dst is None:
                        unresolved += 1
                    elif dst != src and (src, dst) not in inherits:
                        inherits[(src, dst)] = None
                        bases.setdefault(src, []).append(dst)
        if unresolved:
            self.result.unresolved["inherits"] += unresolved

    def merge(self, found: Found) -> None:
        """Add the next files' calls and imports (in file order: a repeat keeps its place)."""
        self.edges["calls"].update(found.calls)
        self.edges["imports"].update(found.imports)
        self.result.unresolved.update(found.unresolved)

    def finish(self) -> Resolution:
        graph = self.result.graph
        graph.edges = {kind: list(pairs) for kind, pairs in self.edges.items()}
        return self.result


def resolve(repo: str, files: list[ParsedFile]) -> Resolution:
    resolver = Resolver(repo, files)
    resolver.structure()
    resolver.merge(resolve_references(resolver.index, resolver.files))
    return resolver.finish()
