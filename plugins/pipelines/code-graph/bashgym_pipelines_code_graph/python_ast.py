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
_LEAVES = (ast.Name, ast.Constant, ast.Load, ast.Store, ast.Del, ast.alias, ast.arg)


def module_id(path: str) -> str:
    """`pkg/sub/mod.py` → `pkg.sub.mod`; a package's `__init__.py` is the package itself."""
    stem = path[:-3] if path.endswith(".py") else path
    parts = [p for p in stem.split("/") if p]
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


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
    seen: set[str] = {mod}
    # (ast node, id of the definition it sits in, that definition's kind, enclosing class id)
    stack: list[tuple[ast.AST, str, str, str]] = [
        (child, mod, "module", "") for child in reversed(tree.body)
    ]
    refs, contains, nodes = out.refs, out.contains, out.nodes
    while stack:
        node, owner, owner_kind, cls = stack.pop()
        kind = type(node)
        if kind is ast.Call:
            name = dotted(node.func)  # type: ignore[attr-defined]
            if name:
                refs.append((owner, "calls", name, cls))
            for child in ast.iter_child_nodes(node):  # calls in the arguments, lambdas, ...
                stack.append((child, owner, owner_kind, cls))
        elif kind in _DEFS or kind is ast.ClassDef:
            is_class = kind is ast.ClassDef
            ident = f"{owner}.{node.name}"  # type: ignore[attr-defined]
            if ident in seen:  # a redefinition (e.g. under `if TYPE_CHECKING`): keep the first
                ident = f"{ident}@{node.lineno}"  # type: ignore[attr-defined]
            seen.add(ident)
            decorators = node.decorator_list  # type: ignore[attr-defined]
            start = decorators[0].lineno if decorators else node.lineno  # type: ignore[attr-defined]
            end = node.end_lineno or node.lineno  # type: ignore[attr-defined]
            doc, d0, d1 = _docstring(node)
            source = "\n".join(lines[start - 1 : end])
            node_kind = "class" if is_class else ("method" if owner_kind == "class" else "function")
            nodes.append(
                Node(ident, node_kind, node.name, "python", path, start, end,  # type: ignore[attr-defined]
                     _header(lines, node), doc, source[:max_source_chars], d0, d1)
            )  # fmt: skip
            contains.append((owner, ident))
            for child in decorators:
                stack.append((child, owner, owner_kind, cls))
            if is_class:
                for base in node.bases:  # type: ignore[attr-defined]
                    name = dotted(base)
                    if name:
                        refs.append((ident, "inherits", name, cls))
                for child in reversed(node.body):  # type: ignore[attr-defined]
                    stack.append((child, ident, "class", ident))
            else:
                for child in ast.iter_child_nodes(node.args):  # type: ignore[attr-defined]
                    stack.append((child, owner, owner_kind, cls))  # defaults run in the owner
                for child in reversed(node.body):  # type: ignore[attr-defined]
                    stack.append((child, ident, node_kind, cls))
        elif kind is ast.Import:
            for alias in node.names:  # type: ignore[attr-defined]
                target: Target = (alias.name, "")
                out.imports.append(target)
                if alias.asname:
                    out.bindings[alias.asname] = target
                else:  # `import a.b` binds `a`
                    head = alias.name.partition(".")[0]
                    out.bindings[head] = (head, "")
        elif kind is ast.ImportFrom:
            base = _absolute(package, node.level, node.module)  # type: ignore[attr-defined]
            for alias in node.names:  # type: ignore[attr-defined]
                if alias.name == "*":
                    out.imports.append((base, ""))
                    continue
                target = (base, alias.name)
                out.imports.append(target)
                out.bindings[alias.asname or alias.name] = target
        elif kind not in _LEAVES:
            for child in ast.iter_child_nodes(node):
                stack.append((child, owner, owner_kind, cls))
    return out
