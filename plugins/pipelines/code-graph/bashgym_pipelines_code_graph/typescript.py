"""TypeScript/JavaScript files → nodes, `contains` edges and unresolved references (tree-sitter).

The grammars are the tree-sitter organisation's own wheels (`tree-sitter-typescript`,
`tree-sitter-javascript`), compiled into the package: nothing is fetched at run time.
Declarations recognised: classes (also abstract), functions and generators, methods, and
functions bound to a name (`const f = () => ...`, class fields holding an arrow function).
A JSDoc comment (`/** ... */`) right before a declaration is its docstring. Imports are ES
`import` statements and `const x = require("./x")`; relative specifiers are resolved against
the file's folder here, and the resolver then tries `<path>` and `<path>/index`.

tree-sitter recovers from syntax errors with ERROR nodes instead of failing; a file whose tree
has any is reported as failing to parse and skipped, as a Python file with a SyntaxError is,
so both languages count failures alike.
"""

from __future__ import annotations

import posixpath
from functools import cache
from typing import Any

from bashgym_pipelines_code_graph.model import Node
from bashgym_pipelines_code_graph.parsed import ParsedFile, Target, failed

EXTENSIONS = {
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
}  # fmt: skip
_CLASSES = ("class_declaration", "abstract_class_declaration")
_FUNCTIONS = ("function_declaration", "generator_function_declaration")
_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")
_FIELDS = ("public_field_definition", "field_definition")
_SKIP = ("comment", "string", "template_string", "regex", "type_annotation", "type_arguments",
         "type_parameters", "interface_declaration", "type_alias_declaration")  # fmt: skip


@cache
def parser(grammar: str) -> Any:
    """One tree-sitter parser per grammar and process."""
    # ~8 ms (measured): this module loads with the package (every command, every parse worker);
    # only TypeScript/JavaScript files need a grammar
    import tree_sitter

    if grammar == "javascript":
        import tree_sitter_javascript as lang

        pointer = lang.language()
    else:
        import tree_sitter_typescript as lang

        pointer = lang.language_tsx() if grammar == "tsx" else lang.language_typescript()
    return tree_sitter.Parser(tree_sitter.Language(pointer))


def module_id(path: str) -> str:
    """`web/src/api.ts` → `web/src/api` (the file path without its extension)."""
    stem, _ = posixpath.splitext(path)
    return stem


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None else ""


def dotted(node: Any) -> str:
    """`a.b.c` / `this.x` for identifier and member chains; '' for anything else."""
    parts = []
    while node is not None and node.type == "member_expression":
        parts.append(_text(node.child_by_field_name("property")))
        node = node.child_by_field_name("object")
    if node is None or node.type not in ("identifier", "this", "type_identifier"):
        return ""
    parts.append(_text(node))
    return ".".join(reversed(parts))


def _jsdoc(node: Any) -> str:
    """The `/** ... */` comment ending on the line before `node` (or on its line), cleaned."""
    previous = node.prev_sibling
    if previous is None or previous.type != "comment":
        return ""
    if previous.end_point[0] < node.start_point[0] - 1:
        return ""
    return _clean_jsdoc(_text(previous))


def _clean_jsdoc(text: str) -> str:
    if not text.startswith("/**"):
        return ""
    lines = [ln.strip().lstrip("*").strip() for ln in text[3:-2].split("\n")]
    return "\n".join(ln for ln in lines if ln).strip()


def _specifier(path: str, spec: str) -> str:
    """An import specifier as a repository path when relative (`./x` from `src/a.ts` →
    `src/x`, extension dropped), else as written (a package: resolved only if the repo has it)."""
    if not spec.startswith("."):
        return spec
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec))
    stem, ext = posixpath.splitext(joined)
    return stem if ext in EXTENSIONS else joined


def _string(node: Any) -> str:
    """The content of a string literal node."""
    for child in node.children:
        if child.type == "string_fragment":
            return _text(child)
    return _text(node).strip("'\"`")


class _Walker:
    """One file's traversal; collects into `out`."""

    def __init__(self, path: str, data: bytes, language: str, max_source_chars: int):
        self.path, self.data, self.language = path, data, language
        self.max = max_source_chars
        self.out = ParsedFile(path, language, module_id(path))
        self.seen: set[str] = {self.out.module_id}

    def define(self, decl: Any, wrapper: Any, name: str, kind: str, owner: str, body: Any) -> str:
        ident = f"{owner}.{name}"
        if ident in self.seen:  # overloads and redefinitions: keep each, apart
            ident = f"{ident}@{decl.start_point[0] + 1}"
        self.seen.add(ident)
        outer = wrapper if wrapper is not None else decl
        start, end = outer.start_point[0] + 1, outer.end_point[0] + 1
        header_end = body.start_byte if body is not None else decl.end_byte
        signature = self.data[decl.start_byte : header_end].decode("utf-8", errors="replace")
        self.out.nodes.append(
            Node(ident, kind, name, self.language, self.path, start, end,
                 " ".join(signature.split()), _jsdoc(outer), _text(outer)[: self.max])
        )  # fmt: skip
        self.out.contains.append((owner, ident))
        return ident

    def imports(self, node: Any) -> None:
        """An ES import: a binding per imported name, and an import of each (of the module
        itself for `import * as ns` and side-effect imports)."""
        source = node.child_by_field_name("source")
        if source is None:
            return
        ref = _specifier(self.path, _string(source))
        targets: list[Target] = []
        clause = next((c for c in node.children if c.type == "import_clause"), None)
        for part in clause.children if clause is not None else []:
            if part.type == "identifier":  # default import
                targets.append((ref, "default"))
                self.out.bindings[_text(part)] = targets[-1]
            elif part.type == "namespace_import":
                names = [c for c in part.children if c.type == "identifier"]
                targets.append((ref, ""))
                if names:
                    self.out.bindings[_text(names[-1])] = targets[-1]
            elif part.type == "named_imports":
                for spec in part.children:
                    if spec.type != "import_specifier":
                        continue
                    name = spec.child_by_field_name("name")
                    alias = spec.child_by_field_name("alias") or name
                    targets.append((ref, _text(name)))
                    self.out.bindings[_text(alias)] = targets[-1]
        self.out.imports.extend(targets or [(ref, "")])

    def require(self, declarator: Any, value: Any) -> bool:
        """`const x = require("./x")`: a binding and an import; True when it was one."""
        if dotted(value.child_by_field_name("function")) != "require":
            return False
        args = value.child_by_field_name("arguments")
        strings = [c for c in args.children if c.type == "string"] if args is not None else []
        name = declarator.child_by_field_name("name")
        if not strings or name is None or name.type != "identifier":
            return False
        target: Target = (_specifier(self.path, _string(strings[0])), "")
        self.out.imports.append(target)
        self.out.bindings[_text(name)] = target
        return True

    def walk(self, root: Any) -> None:
        mod = self.out.module_id
        stack: list[tuple[Any, str, str, str, Any]] = [
            (c, mod, "module", "", None) for c in reversed(root.children)
        ]
        refs = self.out.refs
        while stack:
            node, owner, owner_kind, cls, wrapper = stack.pop()
            kind = node.type
            if kind in _SKIP or not node.child_count:
                continue
            if kind == "import_statement":
                self.imports(node)
                continue
            if kind == "export_statement":
                default = any(c.type == "default" for c in node.children)
                for child in reversed(node.children):
                    stack.append((child, owner, owner_kind, cls, node))
                decl = node.child_by_field_name("declaration")
                name = decl.child_by_field_name("name") if decl is not None else None
                if default and name is not None:
                    self.out.bindings["default"] = (mod, _text(name))
                continue
            if kind in _CLASSES:
                name = _text(node.child_by_field_name("name"))
                body = node.child_by_field_name("body")
                ident = self.define(node, wrapper, name, "class", owner, body)
                for part in node.children:
                    if part.type == "class_heritage":
                        self.heritage(part, ident, cls)
                for child in reversed(body.children if body is not None else []):
                    stack.append((child, ident, "class", ident, None))
                continue
            if kind in _FUNCTIONS or kind == "method_definition":
                name = _text(node.child_by_field_name("name"))
                body = node.child_by_field_name("body")
                node_kind = "method" if owner_kind == "class" else "function"
                ident = self.define(node, wrapper, name, node_kind, owner, body)
                for child in reversed(node.children):
                    stack.append((child, ident, node_kind, cls, None))
                continue
            if kind == "variable_declarator" or kind in _FIELDS:
                name_node = node.child_by_field_name("name") or node.child_by_field_name("property")
                value = node.child_by_field_name("value")
                if (
                    value is not None
                    and value.type == "call_expression"
                    and self.require(node, value)
                ):
                    continue
                if (
                    value is not None
                    and value.type in _FUNCTION_VALUES
                    and name_node is not None
                    and name_node.type in ("identifier", "property_identifier")
                ):
                    statement = node.parent if kind == "variable_declarator" else None
                    outer = wrapper or (statement if statement is not None else None)
                    node_kind = "method" if owner_kind == "class" else "function"
                    ident = self.define(
                        node, outer, _text(name_node), node_kind, owner,
                        value.child_by_field_name("body"),
                    )  # fmt: skip
                    for child in reversed(value.children):
                        stack.append((child, ident, node_kind, cls, None))
                    continue
            elif kind == "call_expression":
                name = dotted(node.child_by_field_name("function"))
                if name:
                    refs.append((owner, "calls", name, cls))
            elif kind == "new_expression":
                name = dotted(node.child_by_field_name("constructor"))
                if name:
                    refs.append((owner, "calls", name, cls))
            for child in node.children:
                stack.append((child, owner, owner_kind, cls, None))

    def heritage(self, part: Any, ident: str, cls: str) -> None:
        """`extends X` (TypeScript wraps it in an extends_clause; JavaScript does not)."""
        for child in part.children:
            if child.type == "extends_clause":
                value = child.child_by_field_name("value")
                name = dotted(value) if value is not None else ""
            elif child.type in ("identifier", "member_expression"):
                name = dotted(child)
            else:
                continue
            if name:
                self.out.refs.append((ident, "inherits", name, cls))


def parse_typescript(path: str, data: bytes, max_source_chars: int) -> ParsedFile:
    """Parse one TS/JS file; a file with syntax errors comes back with `error` set."""
    language = EXTENSIONS[posixpath.splitext(path)[1]]
    lang_name = "javascript" if language == "javascript" else "typescript"
    mod = module_id(path)
    try:
        tree = parser(language).parse(data)
    except (ValueError, RuntimeError) as exc:
        return failed(path, lang_name, mod, f"{type(exc).__name__}: {exc}")
    root = tree.root_node
    if root.has_error:
        row = _first_error_row(root)
        return failed(path, lang_name, mod, f"syntax error near line {row}")
    walker = _Walker(path, data, lang_name, max_source_chars)
    text = data.decode("utf-8", errors="replace")
    doc = _module_doc(root)
    walker.out.nodes.append(
        Node(mod, "module", posixpath.basename(mod), lang_name, path, 1,
             text.count("\n") + 1, "", doc, text[:max_source_chars])
    )  # fmt: skip
    walker.walk(root)
    return walker.out


def _module_doc(root: Any) -> str:
    """A leading `/** ... */` comment is the module's docstring unless it sits right on a
    declaration (then it is that declaration's JSDoc)."""
    children = root.children
    if not children or children[0].type != "comment":
        return ""
    comment = children[0]
    following = children[1] if len(children) > 1 else None
    attached = (
        following is not None
        and following.type != "import_statement"
        and following.start_point[0] <= comment.end_point[0] + 1
    )
    return "" if attached else _clean_jsdoc(_text(comment))


def _first_error_row(root: Any) -> int:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            return node.start_point[0] + 1
        stack.extend(c for c in reversed(node.children) if c.has_error or c.is_missing)
    return root.start_point[0] + 1
