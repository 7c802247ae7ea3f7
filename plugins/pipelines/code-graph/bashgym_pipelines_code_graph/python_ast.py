"""Python files → nodes, `contains` edges and unresolved references, with the standard `ast`.

One pass over the tree with an explicit stack (each entry knows the definition it sits in), so
a file costs about what `ast.parse` plus `ast.walk` cost: the bench compares the two. Leaves
that can hold nothing of interest (names, constants, contexts) are not descended into.
Signatures and sources are sliced from the file's lines rather than rebuilt with
`ast.unparse`, which is many times slower and loses the author's formatting.
"""

from __future__ import annotations

import ast
import warnings

from bashgym_pipelines_code_graph.model import Node
from bashgym_pipelines_code_graph.parsed import ParsedFile, Target, failed

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LEAVES = frozenset({ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias, ast.arg})
# Fields that never hold a node worth a visit: names, numbers, contexts, operators.
_SCALAR_FIELDS = frozenset({
    "ctx", "id", "attr", "arg", "asname", "name", "names", "module", "level", "kind",
    "type_comment", "conversion", "is_async", "simple", "kwd_attrs", "rest", "tag", "op", "ops",
})  # fmt: skip
# Of a function's `arguments`, the fields that are expressions (the rest are `arg` leaves).
_ARG_FIELDS = ("kw_defaults", "defaults")
_CHILDREN: dict[type, tuple[str, ...]] = {}  # ast class -> its _child_fields, filled as met


def module_id(path: str) -> str:
    """`pkg/sub/mod.py` → `pkg.sub.mod`; a package's `__init__.py` is the package itself. A
    leading `src/` is the src layout's folder, not a package: `src/click/core.py` is
    `click.core`, the name its users import."""
    stem = path[:-3] if path.endswith(".py") else path
    parts = [p for p in stem.split("/") if p]
    if len(parts) > 1 and parts[0] == "src":
        parts.pop(0)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _overload(decorators: list[ast.expr]) -> bool:
    """`@overload` / `@typing.overload`: a stub without a body, not the function callers reach."""
    return any(dotted(d).rpartition(".")[2] == "overload" for d in decorators)


def dotted(expr: ast.expr) -> str:
    """`a.b.c` for a Name/Attribute chain; '' for anything else (a call result, a subscript)."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return ""
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _header(lines: list[str], node: ast.AST) -> str:
    """The definition's header as written (`def f(x: int) -> str:`), decorators excluded."""
    body = node.body  # type: ignore[attr-defined]
    first = body[0] if body else None
    start = node.lineno  # type: ignore[attr-defined]
    if first is not None and first.lineno > start:
        text = "\n".join(lines[start - 1 : first.lineno - 1])
    else:
        line = lines[start - 1] if start - 1 < len(lines) else ""
        text = line[: first.col_offset] if first is not None else line
    text = text.strip()
    colon = text.rfind(":")
    return text[: colon + 1] if colon > 0 else text


def _docstring(node: ast.AST) -> tuple[str, int, int]:
    """(cleaned docstring, first line, last line) or ('', 0, 0)."""
    body = getattr(node, "body", None)
    if not body:
        return "", 0, 0
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        doc = ast.get_docstring(node) or ""  # type: ignore[arg-type]
        return doc, first.lineno, first.end_lineno or first.lineno
    return "", 0, 0


def _package(mod: str, is_package: bool) -> str:
    return mod if is_package else mod.rpartition(".")[0]


def _absolute(package: str, level: int, name: str | None) -> str:
    """The absolute module of `from <level dots><name> import ...` inside `package`."""
    if level == 0:
        return name or ""
    parts = package.split(".") if package else []
    base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    return ".".join([*base, name] if name else base)


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of an ast class that can hold nodes worth visiting (none for a leaf)."""
    if kind in _LEAVES or not issubclass(kind, ast.AST):
        return ()
    return tuple(f for f in kind._fields if f not in _SCALAR_FIELDS)


class _Walker:
    """One file's walk. Each definition's body is walked by its own call of `scan` (the owner is
    an argument, not a field of every stack entry), started right where the definition is met:
    the same order as one explicit stack, with fewer tuples per ast node."""

    def __init__(self, out: ParsedFile, lines: list[str], package: str, max_chars: int) -> None:
        self.out, self.lines, self.package, self.max_chars = out, lines, package, max_chars
        self.seen: set[str] = {out.module_id}

    def scan(self, stack: list, owner: str, owner_kind: str, cls: str) -> None:
        """Walk `stack` (top last) inside definition `owner`, enclosing class `cls`.

        Most nodes are plain expressions and statements: they are tried first, by one dict
        lookup of their class (calls, definitions and imports are never in `_CHILDREN`)."""
        refs, children = self.out.refs, _CHILDREN
        pop, push, extend = stack.pop, stack.append, stack.extend
        call, name_kind, attribute = ast.Call, ast.Name, ast.Attribute
        while stack:
            node = pop()
            kind = type(node)
            fields = children.get(kind)
            if fields is None:
                if kind is call:
                    func = node.func
                    if type(func) is name_kind:
                        refs.append((owner, "calls", func.id, cls))
                    elif type(func) is attribute:
                        value = func.value
                        if type(value) is name_kind:  # `x.f()`, the most common (`self.f()`)
                            refs.append((owner, "calls", f"{value.id}.{func.attr}", cls))
                        else:
                            name = dotted(func)
                            if name:
                                refs.append((owner, "calls", name, cls))
                    push(func)  # calls in the callee, the arguments, lambdas, ...
                    extend(node.args)
                    extend(node.keywords)
                    continue
                if kind in _DEFS or kind is ast.ClassDef:
                    self.definition(node, kind is ast.ClassDef, owner, owner_kind, cls, stack)
                    continue
                if kind is ast.Import or kind is ast.ImportFrom:
                    self.imports(node, kind is ast.Import, owner, owner_kind)
                    continue
                fields = children[kind] = _child_fields(kind)
            for name in fields:
                value = getattr(node, name)
                if type(value) is list:
                    extend(value)
                elif value is not None:
                    push(value)

    def definition(
        self, node: ast.AST, is_class: bool, owner: str, owner_kind: str, cls: str, stack: list
    ) -> None:
        out, lines = self.out, self.lines
        ident = f"{owner}.{node.name}"  # type: ignore[attr-defined]
        decorators = node.decorator_list  # type: ignore[attr-defined]
        # A redefinition (e.g. under `if TYPE_CHECKING`) keeps the first its plain id; an
        # `@overload` stub never takes it, so calls land on the implementation, which has a body.
        if ident in self.seen or (not is_class and _overload(decorators)):
            ident = f"{ident}@{node.lineno}"  # type: ignore[attr-defined]
        self.seen.add(ident)
        start = decorators[0].lineno if decorators else node.lineno  # type: ignore[attr-defined]
        end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
        doc, d0, d1 = _docstring(node)
        source = "\n".join(lines[start - 1 : end])
        node_kind = "class" if is_class else ("method" if owner_kind == "class" else "function")
        out.nodes.append(
            Node(ident, node_kind, node.name, "python", out.file, start, end,  # type: ignore[attr-defined]
                 _header(lines, node), doc, source[: self.max_chars], d0, d1)
        )  # fmt: skip
        out.contains.append((owner, ident))
        stack.extend(decorators)  # walked in the owner, once the body is done
        if is_class:
            for base in node.bases:  # type: ignore[attr-defined]
                if isinstance(base, ast.Subscript):  # `ParamType[bool]`: the generic's class
                    base = base.value
                name = dotted(base)
                if name:
                    out.refs.append((ident, "inherits", name, cls))
            self.scan(node.body[::-1], ident, "class", ident)  # type: ignore[attr-defined]
        else:
            arguments = node.args  # type: ignore[attr-defined]
            for name in _ARG_FIELDS:  # defaults run in the owner, once the body is done
                stack.extend(v for v in getattr(arguments, name) if v is not None)
            self.scan(node.body[::-1], ident, node_kind, cls)  # type: ignore[attr-defined]

    def imports(self, node: ast.AST, plain: bool, owner: str, owner_kind: str) -> None:
        """An import binds its names where it stands: the module's, or a function's own (a
        local import inside a method names what it imports there, not elsewhere)."""
        out = self.out
        bindings = out.bindings
        if owner_kind != "module":
            bindings = out.scoped.setdefault(owner, {})
        if plain:
            for alias in node.names:  # type: ignore[attr-defined]
                target: Target = (alias.name, "")
                out.imports.append(target)
                if alias.asname:
                    bindings[alias.asname] = target
                else:  # `import a.b` binds `a`
                    head = alias.name.partition(".")[0]
                    bindings[head] = (head, "")
            return
        base = _absolute(self.package, node.level, node.module)  # type: ignore[attr-defined]
        for alias in node.names:  # type: ignore[attr-defined]
            if alias.name == "*":
                out.imports.append((base, ""))
                continue
            target = (base, alias.name)
            out.imports.append(target)
            bindings[alias.asname or alias.name] = target


def parse_python(path: str, data: bytes, max_source_chars: int) -> ParsedFile:
    """Parse one file (repository-relative `path`, raw bytes); errors are returned, not raised."""
    mod = module_id(path)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escapes etc. in old code are not ours
            tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return failed(path, "python", mod, f"{type(exc).__name__}: {exc}".split("\n")[0])
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    out = ParsedFile(path, "python", mod)
    doc, d0, d1 = _docstring(tree)
    out.nodes.append(
        Node(mod, "module", mod.rpartition(".")[2] or mod, "python", path, 1, len(lines),
             "", doc, text[:max_source_chars], d0, d1)
    )  # fmt: skip
    package = _package(mod, path.endswith("__init__.py"))
    _Walker(out, lines, package, max_source_chars).scan(tree.body[::-1], mod, "module", "")
    return out
