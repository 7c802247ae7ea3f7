"""Secrets found by their names: `NAME <separator> VALUE` in every syntax a transcript mixes.

One finder covers INI (`aws_secret_access_key = ...`), YAML (`password: ...`), TOML, `.env` and
shell (`export API_KEY=...`), JSON text (`"client_secret": "..."`), code (`api_key="..."`,
`os.environ["TOKEN"] = ...`, `password: str = "..."`), query and connection strings
(`?access_token=...&`, `Password=...;`), command-line flags (`--password ...`), Dockerfile
`ENV NAME value` and HTTP headers (`Authorization: Bearer ...`, `X-Api-Key: ...`); `pairs` covers
names and values written apart (Kubernetes `- name: DB_PASSWORD` / `value: ...`, XML elements,
NuGet's `<add key="Password" value="..."/>`). It starts from each occurrence of a name gate
(`names.NAME_GATES`), widens it to the whole name, and reads what follows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from bashgym_scrubbers_secrets.names import (
    NameClass,
    basic_credentials,
    classify,
    looks_random,
    placeholder,
    plausible,
    qualified_hex_key,
    random_letters,
    wordy_parts,
)

if TYPE_CHECKING:
    from bashgym_scrubbers_secrets.detect import Context

Finding = tuple[int, int, str]

_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_TAIL = re.compile(r"[A-Za-z0-9_.\-]*")
# After the name: its closing quote or bracket (`"password":`, `environ["KEY"] =`), an optional
# type annotation (`token: str = ...`), then `=`, `:=`, `=>` or a `:` that is followed by a
# space or a quote (so `a::b`, `arn:aws:...` and `http://` are not assignments).
_SEP = re.compile(
    r"""(?:\\?["'`])?\]?(?:\[[0-9]*\])?
    (?:[ \t]*:[ \t]+[A-Za-z_][A-Za-z_\[\]., |]*?[0-9]{0,2}\]?[ \t]*(?==(?![=~>])))?
    [ \t]*(?::{1,3}=|[?.+]=|=>|[!=]==?|=(?![=~>])|:(?=[ \t]|\\?["'`])|:(?=[A-Za-z0-9+/_\-]{16})
    |[ \t]-[ \t]+(?=\\?["'`])|[ \t]*(?:\?\?|\|\|)(?=[ \t]*\\?["'`]))[ \t]*""",
    re.X,
)  # `=`, `:=`, `::=`, `?=`, `.=`, `=>`, `==`, `!==`, `: ` or `:"`, `:TOKEN`, ` - 'value'`,
#    a quoted fallback: `process.env.TOKEN ?? "..."`, `API_KEY || '...'`
_QUOTED_PAIR = re.compile(r"""\\?["'`][ \t]*,[ \t]*(?=\\?["'`])""")
_QUOTED_PAIR_VALUE = re.compile(r"""\\?(["'`])[^"'`\n]*\\?\1""")  # closed on the line
_QUOTES = "\"'`"
_DIGIT_AND_LETTER = re.compile(r"[0-9].*[A-Za-z]|[A-Za-z].*[0-9]")
_LONG_NUMBER = re.compile(r"[0-9]{12,}")  # a numeric credential (Discord, Asana ids and secrets)
_ASSIGNMENT_START = re.compile(r"[A-Za-z_][\w.\-]*=")
_COMPOUND_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+")  # Base64-encoded
_MODULE_LIKE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*")  # urllib2, os.path
_TRUNCATED = re.compile(r"(?:\.\.\.|…)$")  # `ops_eyJzaWdu...`: a doc's cut-off example
_TYPE_CONTINUES = re.compile(r"[ \t]*(?:\|[ \t]|=(?!=)|\))")  # `Type | Other`, `Type = x`
_FLAG_SEP = re.compile(r"[ \t]+(?=[^\s-])")  # --password VALUE
_DOCKER_ENV = re.compile(r"(?:^|\\n)[ \t]*(?:ENV|ARG)[ \t]+\Z", re.M)  # Dockerfile ENV NAME VALUE
# `setx NAME VALUE` (Windows), `setenv NAME VALUE` (csh, launchctl), `set -gx NAME VALUE` (fish),
# `aws configure set NAME VALUE`, C's `#define NAME VALUE`
_SETENV_COMMANDS = (
    r"(?:setx|setenv|set[ \t]+-[A-Za-z]*[xU][A-Za-z]*|configure[ \t]+set|#[ \t]*define)"
)
_SETENV = re.compile(r"(?:^|[\s;&|(])" + _SETENV_COMMANDS + r"[ \t]+\Z", re.I)
_GO_DECL = re.compile(r"(?:^|[\s;{(])(?:var|const)[ \t]+\Z")  # Go `var NAME TYPE = VALUE`
_GO_TYPE_SEP = re.compile(r"[ \t]+\*?(?:\[\])?[A-Za-z_][\w.]*[ \t]*=(?![=~>])[ \t]*")
_HEADER_FLAG = re.compile(r"(?:-H|--header)[ \t]+\\?[\"']\Z")  # curl -H "Token: ..."
_YAML_TAG = re.compile(r"!![A-Za-z]+[ \t]+")  # `token: !!binary c2VjcmV0`
# A value on the lines after its name: INI continuation lines, YAML block scalars
# (`password =` / `key: |` then an indented line holding one token).
_NEXT_LINE_VALUE = re.compile(r"(?:[|>][-+]?)?[ \t]*\r?\n([ \t]+)(?=[^\s:#]+[ \t]*(?:\r?\n|$))")
_VALUE = re.compile(
    r"""\\(?P<eq>["'])(?P<ev>(?:(?!\\(?P=eq))[^\n])*)(?:\\(?P=eq)|$)
    |(?P<q>["'`])(?P<qv>(?:\\.|(?!(?P=q))[^\\\n])*)(?:(?P=q)|$)
    |(?P<bare>(?:[^\s'"`;&,<>\\]|\\(?![nrt"'\\])|[;&,](?![ \t]*[A-Za-z_][\w.\- ]*=))+)""",
    re.X | re.M,
)
# Python's string prefixes: a bytes, unicode or f-string literal is the value (`b'...'`,
# `f"token {x}"`); a raw string is nearly always a regex, so `r'...'` is not read. An f-string
# that interpolates (`f"{user}:{password}"`) is code, not a value (`_INTERPOLATES`).
_STRING_PREFIX = re.compile(r"[bBuUfF](?=[\"'])")
_INTERPOLATES = re.compile(r"""[fF](["'])(?:(?!\1)[^\n])*\{""")


def _literal_start(text: str, pos: int) -> int | None:
    """Where the value at `pos` starts, past a Python string prefix; None for an f-string that
    interpolates."""
    if _INTERPOLATES.match(text, pos):
        return None
    prefix = _STRING_PREFIX.match(text, pos)
    return prefix.end() if prefix else pos


_HEADER_VALUE = re.compile(
    r"""(?:\\?["'`])?(?:(?P<scheme>[A-Za-z][\w-]*)[ \t]+)?(?P<cred>[^\s'"`,;\\]+)"""
)
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")
# not a tag or a tag's end (`</k>`, `<br>`), nor a shell redirection (`>/dev/null`, `2>&1`, `<(`)
_INSIDE_VALUE = re.compile(r">[^\s'\"`<>/&|(]|<[^\s'\"`<>/A-Za-z!?&(]")
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def assignments(text: str, ctx: Context, gate_ids: Sequence[int]) -> Iterable[Finding]:
    seen: set[int] = set()
    for p in ctx.positions(gate_ids):
        lo = p
        while lo > 0 and p - lo < 128 and text[lo - 1] in _NAME_CHARS:
            lo -= 1
        if lo in seen or text.endswith("[REDACTED:", max(0, lo - 10), lo):
            continue  # a name seen already, or a placeholder's type (`[REDACTED:aws-key]=`)
        seen.add(lo)
        hi = _NAME_TAIL.match(text, p).end()  # type: ignore[union-attr]
        name = text[lo:hi]
        kind = classify(name)
        if kind is not None:
            yield from value_after(text, lo, hi, name, kind)


# `--password VALUE` (a flag, then whitespace) and Dockerfile `ENV NAME VALUE`.
_FLAG = re.compile(r"""(?:^|(?<=[\s'"`]))(?P<n>--?[A-Za-z][A-Za-z0-9_.\-]*)[ \t]+""", re.M)
_DOCKER_ENV_NAME = re.compile(  # at a line start, or after a `\n` escape (JSON text in a log)
    r"(?:^|\\n)[ \t]*(?:ENV|ARG)[ \t]+(?P<n>[A-Za-z_][A-Za-z0-9_]*)[ \t]+", re.M
)
_SETENV_NAME = re.compile(
    r"(?:^|(?<=[\s;&|(]))" + _SETENV_COMMANDS + r"[ \t]+"
    r"(?P<n>[A-Za-z_][A-Za-z0-9_.]*)[ \t]+",
    re.M | re.I,
)
_GO_VAR = re.compile(  # Go `var apiToken string = "..."` (the type between name and `=`)
    r"(?:^|(?<=[\s;{(]))(?:var|const)[ \t]+(?P<n>[A-Za-z_][\w\-]*)"
    r"(?=[ \t]+\*?(?:\[\])?[A-Za-z_][\w.]*[ \t]*=)",
    re.M,
)


def flags(text: str, ctx: Context, gate_ids: Sequence[int]) -> Iterable[Finding]:
    """A name, whitespace, a value: on the lines where a flag, ENV or setenv gate matched."""
    for lo, hi in ctx.windows(gate_ids):
        for pattern in (_FLAG, _DOCKER_ENV_NAME, _GO_VAR, _SETENV_NAME):
            for m in pattern.finditer(text, lo, hi):
                kind = classify(m.group("n"))
                if kind is not None:
                    yield from value_after(text, m.start("n"), m.end("n"), m.group("n"), kind)


def value_after(text: str, lo: int, hi: int, name: str, kind: NameClass) -> Iterable[Finding]:
    m, pair, flag = _SEP.match(text, hi), False, False
    before = text[lo - 1] if lo > 0 else ""
    closes = (
        m is not None
        and text[hi : hi + 1] == ":"
        and text[hi + 1 : hi + 2] in _QUOTES
        and text[hi + 2 : hi + 3] in ("", " ", ",", ")", ";", "\n", "]", "}", "+", ".")
    )
    if closes and before and before in "\"'` \t":
        return  # `"Error fetching credentials:"`, `b'secret:'`: the end of a string
    if m is None and _GO_DECL.search(text, max(0, lo - 8), lo):
        m = _GO_TYPE_SEP.match(text, hi)  # var apiToken string = "..."
    if m is None and before in "\"'`":
        pair_match = _QUOTED_PAIR.match(text, hi)  # define('DB_PASSWORD', '...')
        value = _QUOTED_PAIR_VALUE.match(text, pair_match.end()) if pair_match else None
        if value is not None and value.group(1) == before:  # quoted alike, closed on the line
            m, pair = pair_match, True
    if m is None:
        window = max(0, lo - 40)
        if name.startswith("-") or any(p.search(text, window, lo) for p in (_DOCKER_ENV, _SETENV)):
            m, flag = _FLAG_SEP.match(text, hi), True
        if m is None:
            return
    if kind.header:
        yield from header_findings(text, m.end(), name)
        return
    if kind.strict and _HEADER_FLAG.search(text, max(0, lo - 12), lo):
        kind = NameClass(kind.type)  # a request header named Token/Key: a credential
    pos = m.end()
    tight = text[pos - 1 : pos] == ":" and text[pos : pos + 1] not in _QUOTES  # `apikey:abc...`
    tag = _YAML_TAG.match(text, pos)
    pos = tag.end() if tag else pos
    if text[pos : pos + 2] in ('@"', "@'"):
        pos += 1  # C# and Objective-C string literals: @"..."
    start = _literal_start(text, pos)
    if start is None:
        return
    pos = start
    following = _NEXT_LINE_VALUE.match(text, pos)
    if following is not None and not flag:
        pos = following.end()
    found = read_value(text, pos)
    if found is None:
        return
    start, end, bare = found
    value = text[start:end]
    if tight and not (looks_random(value) or qualified_hex_key(value, name)):
        return  # `name:value` with no space: only a token-shaped value (`apikey:abcd1234...`)
    if bare and m.group().rstrip().endswith(":") and _COMPOUND_WORD.fullmatch(value):
        line_end = text.find("\n", end)
        if len(text[start : line_end if line_end != -1 else len(text)].split()) >= 3:
            return  # `credentials: Base64-encoded credentials (...)`: a docstring, not YAML
    if _TRUNCATED.search(value):
        return
    module = _MODULE_LIKE.fullmatch(value) is not None and wordy_parts(value)
    token_like = (
        _DIGIT_AND_LETTER.search(value) or random_letters(value) or _LONG_NUMBER.fullmatch(value)
    )
    if pair and (module or not token_like):
        return  # `MovedAttribute("HTTPPasswordMgr", "urllib2", ...)`: a name, not a value
    if flag and _ASSIGNMENT_START.match(value):
        return  # `--secrets KEY=value`: the assignment after the flag is judged on its own
    if bare and _TYPE_CONTINUES.match(text, end):
        return  # `key: Ed25519PrivateKey | Ed448PrivateKey`: a type, not a value
    # A bare value's trailing `.`/`:` is as likely the sentence's: judged without it, redacted
    # with it.
    if plausible(value.rstrip(".:!?") if bare else value, kind, bare=bare, name=name):
        aws = kind.type == "secret" and "AWS" in name.upper() and _AWS_SECRET.fullmatch(value)
        yield start, end, "aws-secret-key" if aws else kind.type


def read_value(text: str, pos: int) -> tuple[int, int, bool] | None:
    """(start, end, unquoted) of the value at `pos`: a quoted string's contents, or a bare
    token up to whitespace, a quote, or a `;`/`&`/`,` that starts the next `name=` pair."""
    m = _VALUE.match(text, pos)
    if m is None:
        return None
    for group in ("ev", "qv", "bare"):
        if m.group(group) is not None:
            start, end = m.span(group)
            break
    if group != "bare":
        return start, end, False
    # `<`/`>` end a bare value only where markup starts (`secret</key>`, `pw<br>`): inside
    # one (`p@ss>w0rd`) the value goes on, else its tail would be left in place.
    while text[end : end + 1] in ("<", ">") and _INSIDE_VALUE.match(text, end):
        more = _VALUE.match(text, end + 1)
        if more is None or more.group("bare") is None:
            break
        end = more.end("bare")
    while end > start and text[end - 1] in ",;":
        end -= 1
    while end > start and text[end - 1] in _CLOSERS:
        if _CLOSERS[text[end - 1]] in text[start : end - 1]:
            break
        end -= 1
    return start, end, True


def header_findings(text: str, pos: int, name: str = "") -> Iterable[Finding]:
    """`Authorization: <scheme> <credentials>`: the credentials, typed by the scheme."""
    start = _literal_start(text, pos)
    if start is None:
        return
    pos = start
    m = _HEADER_VALUE.match(text, pos)
    if m is None:
        return
    bare = text[pos : pos + 1] not in _QUOTES and text[pos : pos + 2] not in ('\\"', "\\'")
    scheme = (m.group("scheme") or "").lower()
    cred = m.group("cred")
    if scheme == "digest":  # `Digest username="...", response="..."`: a hash, not a secret
        return
    if cred[:1] in "<{$" or placeholder(cred):
        return  # `Bearer <Openverse API token>`, `Bearer ${TOKEN}`
    secret = NameClass("secret")
    if scheme == "basic":  # `user:` (an API key as the user) counts; so does a long random blob
        ok = basic_credentials(cred, empty_password=True) or looks_random(cred)
    else:
        ok = plausible(cred, secret, bare=bare)
    if ok:
        type_ = {"basic": "basic-auth", "bearer": "bearer-token"}.get(scheme, "secret")
        yield m.start("cred"), m.end("cred"), type_


# A value written before its name (`if ("..." == password)`), or after it with no separator
# (`secret "...";`).
_COMPARED = (
    re.compile(
        r"""(?P<q>["'`])(?P<s>[^"'`\n]{1,200})(?P=q)[ \t]*[!=]==?[ \t]*(?P<n>[A-Za-z_][\w.]*)"""
    ),
    re.compile(r"""(?P<n>[A-Za-z_][\w.\-]*)[ \t]+(?P<q>["'])(?P<s>[^"'\n]{1,200})(?P=q);"""),
)


def compared(text: str, ctx: Context, gate_ids: Sequence[int]) -> Iterable[Finding]:
    # Near each gate match, not over its whole line: a trace's JSON is one long line, and these
    # regexes start with a character class (tried at every position).
    spans: list[tuple[int, int]] = []
    for p in ctx.positions(gate_ids):
        lo, hi = max(0, p - 260), min(len(text), p + 260)
        if spans and lo <= spans[-1][1]:
            spans[-1] = (spans[-1][0], hi)
        else:
            spans.append((lo, hi))
    for lo, hi in spans:
        for pattern in _COMPARED:
            for m in pattern.finditer(text, lo, hi):
                kind = classify(m.group("n"))
                if kind is not None and plausible(m.group("s"), kind, name=m.group("n")):
                    yield m.start("s"), m.end("s"), kind.type


# A setter or a builder that is handed the secret, as in `setApiKey("...")`, `set_password('...')`,
# `withToken("...")`, `.apiKey("...")`. Free functions (`hash_password("...")`, `print("token")`)
# are not read: their argument need not be the secret.
_CALL = re.compile(r"""(?:\.|\b)(?P<call>[A-Za-z_]\w*)\([ \t]*(?=\\?["'`])""")
_SETTER = re.compile(r"(?i:set|with)_?(?=[A-Za-z])")
# a builder method that is only the secret's name: `.apiKey(`, `.password(`, `.clientSecret(`
_SECRET_WORD_ONLY = re.compile(
    r"(?i:api_?key|password|passwd|secret|client_?secret|token|access_?token|auth_?token"
    r"|secret_?key|private_?key|access_?key)"
)


def calls(text: str, ctx: Context, gate_ids: Sequence[int]) -> Iterable[Finding]:
    for lo, hi in ctx.windows(gate_ids):
        for m in _CALL.finditer(text, lo, hi):
            call = m.group("call")
            setter = _SETTER.match(call)
            if setter is None and text[m.start() : m.start() + 1] != ".":
                continue
            name = call[setter.end() :] if setter is not None else call
            kind = classify(name)
            if kind is None or (setter is None and not _SECRET_WORD_ONLY.fullmatch(name)):
                continue  # `.get_token("...")`: a method about a token, not its value
            found = read_value(text, m.end())
            if found is not None and not found[2]:
                value = text[found[0] : found[1]]
                if plausible(value, kind, name=name):
                    yield found[0], found[1], kind.type


# Names and values written apart. Each regex's `n` group is the name, the value follows.
_PAIRS = (
    # Kubernetes env / AWS tags / GitHub secrets: `name: X` + `value: Y` (next line or `,`)
    re.compile(
        r"""(?:name|key|Name|Key|NAME|KEY)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?
        (?P<n>[A-Za-z_][\w.\-]*)(?:\\?["'])?[ \t]*(?:,[ \t]*|(?:\r?\n|\\n)[ \t]*(?:-[ \t]+)?)
        (?:\\?["'])?(?:value|Value|VALUE)(?:\\?["'])?[ \t]*[:=][ \t]*""",
        re.X,
    ),
    # NuGet.config `<add key="ClearTextPassword" value="..." />`, appSettings (quotes may be
    # JSON-escaped: this runs on raw text too)
    re.compile(r"""key=\\?["'](?P<n>[^"'\\\n]+)\\?["'][ \t]+value=(?=\\?["'])"""),
    # Java's XML properties `<entry key="password">...</entry>`
    re.compile(r"""<entry[ \t]+key=\\?["'](?P<n>[^"'\\\n]+)\\?["'][ \t]*>"""),
)
_XML = re.compile(  # on one line, or the value on its own line between the tags
    r"<(?P<n>[A-Za-z_][\w.\-]*)(?:[ \t][^<>\n]*)?>(?:[ \t]*\r?\n[ \t]*)?"
    r"(?P<s>[^<\s](?:[^<\n]{0,498}[^<\s])?)(?:[ \t]*\r?\n[ \t]*)?</(?P=n)>"
)


def pairs(text: str, ctx: Context, gate_ids: Sequence[int]) -> Iterable[Finding]:
    for lo, hi in ctx.windows(gate_ids, before=2):
        for pattern in _PAIRS:
            for m in pattern.finditer(text, lo, hi):
                kind = classify(m.group("n"))
                if kind is None:
                    continue
                found = read_value(text, m.end())
                if found is not None and plausible(text[found[0] : found[1]], kind):
                    yield found[0], found[1], kind.type
        for m in _XML.finditer(text, lo, hi):
            kind = classify(m.group("n"))
            if kind is not None and plausible(m.group("s"), kind):
                yield m.start("s"), m.end("s"), kind.type
