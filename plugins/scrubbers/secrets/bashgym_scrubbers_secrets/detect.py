"""Find secrets in strings, frames and JSON text, and replace each with a typed placeholder.

Why it matters: agent transcripts are full of secrets (an agent runs `cat .env`, echoes
`$OPENAI_API_KEY`, writes a config with a database URL), and training data gets published. The
engine runs this scrubber over seed rows before any pipeline sees them, over every row before
the sinks, and over event text; with scrubbing on and no scrubber installed it refuses to write.

What it finds (`rules.py`): detect-secrets' detectors, ~80 token formats it lacks, private keys
(PEM, PuTTY, base64 PEM), JWTs, URL credentials, HTTP auth headers, command-line passwords, and
values under secret-looking names in any syntax (`assign.py`, `names.py`). Left alone on purpose:
entropy alone (git SHAs, UUIDs, hashes and base64 blobs are worth keeping in training data).

How it stays fast: one multi-pattern scan (`prefilter.py`: Hyperscan, else RE2, else `re`) says
which rules' gates occur in a string; only those rules run, each checking its gates again itself,
so the output never depends on the backend (tested). JSON text (the `trace` column, tool-call
arguments) is not parsed whole: the gates are found in the raw text, and only the string literals
that hold one (and the values of secret-named keys) are decoded, scrubbed and written back. That
is exact because a gate never contains a character JSON escapes; a document whose escapes could
hide one (`\\u0041`, `\\/`: found by two more gates of the same scan, `rules.ESCAPE_GATES`) is
parsed and walked instead, even where no other gate occurs, and text that is not JSON after all is
scrubbed as text. Scrubbing decoded strings rather than the raw JSON matters: `.env` lines and
PEM blocks inside JSON have `\\n` escapes for newlines, and a replacement must not cut an escape.
A pandas 3 (Arrow) string column is scanned on its own UTF-8 bytes, not encoded again.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from bashgym_scrubbers_secrets import prefilter as prefilters
from bashgym_scrubbers_secrets.assign import header_findings
from bashgym_scrubbers_secrets.names import PLACEHOLDER, PLACEHOLDER_RE, classify, plausible
from bashgym_scrubbers_secrets.rules import ESCAPE_GATES, Rule, RuleSet, left_ok, ruleset

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PLACEHOLDER", "PLACEHOLDER_RE", "Scrubber", "detector_types"]

MIN_SCAN_LEN = 6  # no rule can match a shorter string (`pw=ab1` is the shortest)
# Docs write keys as ghp_xxxxxxxx..., sntryu_aaaaaaaa..., ABSK...EXAMPLEEXAMPLE, or count
# through the alphabet (sk-ant-...-klmnopqrstuvwx-...): samples, not secrets.
_FILLER = re.compile(
    r"([xX*.#0])\1{5,}|([a-z])\2{11,}|\[REDACTED:|(?:EXAMPLE){2}"
    r"|abcdefgh|bcdefghi|cdefghij|defghijk|efghijkl|fghijklm|ghijklmn|hijklmno|ijklmnop"
    r"|jklmnopq|klmnopqr|lmnopqrs|mnopqrst|nopqrstu|opqrstuv|pqrstuvw|qrstuvwx|rstuvwxy|stuvwxyz"
)
TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")  # a token regex with a fixed length may stop early


class Context:
    """One string being scrubbed: where each gate occurs (found once, shared by the rules).

    A gate's positions come from the prefilter's one scan where it can (`anchors`: a position
    inside each match), else from `re` here (each match's start). The two differ, but only
    within a match, so every user of positions depends only on what they share: the lines
    holding a match (`windows`), the name a match is in (`assign.py`), the JSON string literal
    a match is in (`Scrubber._json`)."""

    def __init__(
        self, text: str, rules: RuleSet, prefilter: Any = None, utf8: bytes | None = None
    ) -> None:
        self.text, self.rules, self._prefilter, self._utf8 = text, rules, prefilter, utf8
        self._lower: str | None = None
        self._positions: dict[int, list[int]] = {}
        self._anchors: dict[int, list[int]] | None = None
        self._windows: dict[tuple[tuple[int, ...], int, int], list[tuple[int, int]]] = {}

    def _gate_positions(self, gate_id: int) -> list[int]:
        found = self._positions.get(gate_id)
        if found is not None:
            return found
        if self._prefilter is not None:
            if self._anchors is None:
                scanned = self._prefilter.anchors(self.text, self._utf8)
                self._anchors = scanned[1] if scanned is not None else {}
                if scanned is None:
                    self._prefilter = None
            if self._prefilter is not None:
                return self._anchors.get(gate_id, [])
        text, gate = self.text, self.rules.gates[gate_id]
        literal = prefilters.literal(gate.pattern)
        if literal is not None and not gate.caseless:
            found = self._find(text, (literal,))
        elif literal is not None and self._lower_aligned():
            found = self._find(self._lower, (literal,), ascii_in=text)  # type: ignore[arg-type]
        elif gate.words and (not gate.caseless or self._lower_aligned()):
            hay = self._lower if gate.caseless else text
            compiled = _compiled(gate.pattern, gate.caseless)
            starts = self._find(hay, gate.words, ascii_in=text if gate.caseless else None)  # type: ignore[arg-type]
            found = [p for p in starts if compiled.match(text, p)]
        else:
            found = [m.start() for m in _compiled(gate.pattern, gate.caseless).finditer(text)]
        self._positions[gate_id] = found
        return found

    @staticmethod
    def _find(hay: str, words: Sequence[str], ascii_in: str | None = None) -> list[int]:
        """Every start of every word in `hay`; with `ascii_in` (the text `hay` lowercases),
        only where that text is ASCII there (`\u212a`, Kelvin, lowercases to an ASCII `k`)."""
        found = []
        for word in words:
            n = len(word)
            i = hay.find(word)
            while i != -1:
                if ascii_in is None or ascii_in[i : i + n].isascii():
                    found.append(i)
                i = hay.find(word, i + 1)
        if len(words) > 1:
            found.sort()
        return found

    def _lower_aligned(self) -> bool:
        """Whether `text.lower()` keeps every character at its index (`İ` lowers to two)."""
        if self._lower is None:
            self._lower = self.text.lower()
        return len(self._lower) == len(self.text)

    def positions(self, gate_ids: Iterable[int]) -> list[int]:
        """Sorted start offsets of every match of these gates."""
        out: set[int] = set()
        for gate_id in gate_ids:
            out.update(self._gate_positions(gate_id))
        return sorted(out)

    def windows(
        self, gate_ids: Sequence[int], before: int = 0, after: int = 0
    ) -> list[tuple[int, int]]:
        """Merged regions: each line holding a gate match, with `before` lines before it and
        `after` lines after it (a gate never spans lines)."""
        key = (tuple(gate_ids), before, after)
        cached = self._windows.get(key)
        if cached is not None:
            return cached
        text, spans = self.text, []
        for p in self.positions(gate_ids):
            if spans and p < spans[-1][1]:
                continue  # on a line already taken
            lo = p
            for _ in range(before + 1):
                nl = text.rfind("\n", 0, lo)
                if nl == -1:
                    lo = 0
                    break
                lo = nl
            else:
                lo += 1  # just after the newline that ends the line before the window
            hi = p
            for line in range(after + 1):
                j = text.find("\n", hi)
                if j == -1:
                    hi = len(text)
                    break
                hi = j + 1 if line < after else j
            spans.append((lo, hi))
        self._windows[key] = merged = _merge(spans)
        return merged


@lru_cache(maxsize=512)
def _compiled(pattern: str, caseless: bool) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | (re.IGNORECASE if caseless else 0))


def run_rule(rule: Rule, text: str, ctx: Context) -> Iterable[tuple[int, int, int, str]]:
    """(start, end, priority, type) of every finding of `rule` in `text`."""
    if rule.finder is not None:
        for start, end, type_ in rule.finder(text, ctx, rule.gate_ids):
            if not _FILLER.search(text, start, end):  # `client_secret=bP88Q~xxxxxxxxxxxxxxxx`
                yield start, end, rule.priority, type_
        return
    regions = [(0, len(text))]
    if rule.windowed:
        regions = ctx.windows(rule.gate_ids, rule.before, rule.after)
    for pattern in rule.patterns:
        for lo, hi in regions:
            for m in pattern.finditer(text, lo, hi):
                for start, end in _spans(rule, m, text):
                    secret = text[start:end]
                    if len(set(secret)) < rule.min_unique or _FILLER.search(secret):
                        continue  # too short, or a doc placeholder (ACxxxxxxxx, ghp_xxxxxx)
                    if rule.bounded and not left_ok(text, start):
                        continue
                    if rule.check is None or rule.check(secret):
                        yield start, end, rule.priority, rule.type


def _spans(rule: Rule, m: re.Match[str], text: str) -> Iterable[tuple[int, int]]:
    if rule.group and m.re.groups:
        named = [i for n, i in m.re.groupindex.items() if n.startswith("s")]
        groups = named or range(1, m.re.groups + 1)
        yield from _merge([m.span(i) for i in groups if -1 < m.start(i) < m.end(i)])
        return
    start, end = m.span()
    while start < end and text[start] in " \t\r\n\"'=:":  # regexes that match their delimiters
        start += 1
    while end > start and text[end - 1] in " \t\r\n\"'":
        end -= 1
    if rule.span is not None:
        start, end = rule.span(text, start, end)
    elif rule.extend:
        end = TOKEN_TAIL.match(text, end).end()  # type: ignore[union-attr]
    yield start, end


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(e, out[-1][1]))
        else:
            out.append((s, e))
    return out


REPEAT_MIN = 6  # a redacted value this long is redacted wherever else it occurs
# Types found by their context (a name, a header, a URL, a flag), not by their own shape: only
# these can be missed where the value is repeated bare, so only these are looked for again
# (a token with its own shape is found by its rule wherever it occurs).
CONTEXT_TYPES = frozenset(
    {"secret", "password", "aws-secret-key", "bearer-token", "basic-auth", "api-key"}
)


def _repeats(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`spans` plus every other occurrence of the values they redact: a secret found once by
    its context (`API_KEY=abc...`) also leaks where it is repeated bare (`echo abc...`)."""
    values = {text[s:e]: t for s, e, t in spans if e - s >= REPEAT_MIN and t in CONTEXT_TYPES}
    extra = []
    for value, type_ in values.items():
        i = text.find(value)
        while i != -1:
            extra.append((i, i + len(value), type_))
            i = text.find(value, i + len(value))
    known = {(s, e) for s, e, _ in spans}
    new = [x for x in extra if (x[0], x[1]) not in known]
    if not new:
        return spans
    out: list[tuple[int, int, str]] = []
    for s, e, t in sorted([*spans, *new]):
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(e, out[-1][1]), out[-1][2])
        else:
            out.append((s, e, t))
    return out


@dataclass
class _Allow:
    literals: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def parse(cls, entries: Sequence[str]) -> _Allow:
        literals = tuple(e for e in entries if not e.startswith("re:") and e)
        patterns = tuple(re.compile(e[3:]) for e in entries if e.startswith("re:"))
        return cls(literals, patterns)

    def __bool__(self) -> bool:
        return bool(self.literals or self.patterns)

    def ranges(self, text: str) -> list[tuple[int, int]]:
        out = []
        for lit in self.literals:
            i = text.find(lit)
            while i != -1:
                out.append((i, i + len(lit)))
                i = text.find(lit, i + 1)
        for pat in self.patterns:
            out.extend(m.span() for m in pat.finditer(text) if m.end() > m.start())
        return out


# ---- JSON text ---------------------------------------------------------------------------------

_JSON_START = re.compile(r"\s*[\[{\"]")
_ESCAPE = re.compile("|".join(g.pattern for g in ESCAPE_GATES))
# json's own C scanner: the decoded string of the literal whose opening quote is just before an
# index, and the index just past its closing quote (strict: no raw control characters).
_scanstring = json.decoder.scanstring
_JSON_VERBATIM = re.compile(r"[\x20\x21\x23-\x5b\x5d-\x7e]+")  # printable ASCII but `"` `\\`
_PAIR_KEYS = {"name", "key", "parameterkey", "parametername", "secretname"}
_WS = " \t\r\n"


def _open_quote(text: str, p: int) -> int:
    """The unescaped `"` nearest before `p` (the opening quote of the literal around `p`)."""
    i = p
    while True:
        q = text.rfind('"', 0, i)
        if q < 0:
            return -1
        k = q
        while k > 0 and text[k - 1] == "\\":
            k -= 1
        if (q - k) % 2 == 0:
            return q
        i = q


def _literal_before(text: str, i: int, sep: str) -> tuple[int, str] | None:
    """The string literal that ends, followed by `sep`, right before index `i`: its start and
    decoded value."""
    c = _prev(text, i)
    if c < 0 or text[c] != sep:
        return None
    k = _prev(text, c)
    q = _open_quote(text, k) if k >= 0 and text[k] == '"' else -1
    if q < 0:
        return None
    try:
        value = json.loads(text[q : k + 1])
    except ValueError:
        return None
    return (q, value) if isinstance(value, str) else None


def _pair_name_before(text: str, q: int) -> str | None:
    """In `{"name": "DB_PASSWORD", "value": ...}`, seen from the `"value"` key at `q`: the
    secret-looking name, or None."""
    named = _literal_before(text, q, ",")
    if named is None or classify(named[1]) is None:
        return None
    key = _literal_before(text, named[0], ":")
    return named[1] if key is not None and key[1].lower() in _PAIR_KEYS else None


def _prev(text: str, i: int) -> int:
    """Index of the last non-whitespace character before `i` (-1 if none)."""
    i -= 1
    while i >= 0 and text[i] in _WS:
        i -= 1
    return i


def _next(text: str, i: int) -> int:
    """Index of the first non-whitespace character at or after `i` (len(text) if none)."""
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


@dataclass
class Scrubber:
    """Finds secrets in strings (and everything nested in lists, dicts and JSON text) and
    replaces each with a typed placeholder, counting what it redacted per type.

    `allow`: literal strings, or regexes written `re:PATTERN`; a finding inside a match of one
    is kept as-is. `backend`: the prefilter (`hyperscan`, `re2`, `python`, or `none` to run every
    rule on every string); by default the fastest installed (or `BASHGYM_SCRUB_PREFILTER`).
    """

    allow: Sequence[str] = ()
    counts: Counter[str] = field(default_factory=Counter)
    backend: str | None = None

    def __post_init__(self) -> None:
        self._allow = _Allow.parse(self.allow)
        self._rules = ruleset()
        self._prefilter = _prefilter(self.backend)
        self.backend = self._prefilter.name if self._prefilter is not None else "none"
        self._seen: dict[str, str] | None = None  # values redacted in the JSON text at hand
        self._names: dict[str, str] = {}  # column name -> scrubbed (equal to it if clean)

    # -- text ----------------------------------------------------------------------------------

    def _fired(
        self, text: str, among: Sequence[int] | None = None, utf8: bytes | None = None
    ) -> Sequence[int]:
        """The gates that occur in `text` (`among`: the only ones that can)."""
        if self._prefilter is None:
            return range(len(self._rules.gates)) if among is None else among
        return sorted(self._prefilter.fired(text, among, utf8))

    def findings(self, text: str) -> list[tuple[int, int, str]]:
        """Non-overlapping (start, end, type) spans to redact in `text` read as plain text."""
        if len(text) < MIN_SCAN_LEN:
            return []
        return self._findings(text, self._rules.fired(self._fired(text)))

    def _findings(
        self, text: str, rules: Sequence[Rule], utf8: bytes | None = None
    ) -> list[tuple[int, int, str]]:
        ctx = Context(text, self._rules, self._prefilter, utf8)
        found = [f for rule in rules for f in run_rule(rule, text, ctx)]
        if not found:
            return []
        if self._allow:
            allowed = self._allow.ranges(text)
            found = [f for f in found if not any(a <= f[0] and f[1] <= b for a, b in allowed)]
        # Overlapping findings merge into one redaction (typed by the most specific, then the
        # longest), so no part of either survives.
        found.sort()
        groups: list[list[Any]] = []
        for start, end, priority, type_ in found:
            best = (priority, end - start)
            if groups and start < groups[-1][1]:
                group = groups[-1]
                group[1] = max(group[1], end)
                if best > group[3]:
                    group[2], group[3] = type_, best
            else:
                groups.append([start, end, type_, best])
        spans = _repeats(text, [(s, e, t) for s, e, t, _ in groups])
        if self._allow and len(spans) > len(groups):  # a repeat may fall in an allowed range
            allowed = self._allow.ranges(text)
            spans = [f for f in spans if not any(a <= f[0] and f[1] <= b for a, b in allowed)]
        return spans

    def _replace(self, text: str, spans: list[tuple[int, int, str]]) -> str:
        if not spans:
            return text
        parts, last = [], 0
        for start, end, type_ in spans:
            parts += [text[last:start], PLACEHOLDER.format(type_)]
            self.counts[type_] += 1
            if self._seen is not None and type_ in CONTEXT_TYPES:
                self._seen[text[start:end]] = type_
            last = end
        parts.append(text[last:])
        return "".join(parts)

    def text(self, text: str) -> str:
        """`text` with every secret replaced by `[REDACTED:type]` (JSON text stays JSON)."""
        return self._string(text)

    # -- values --------------------------------------------------------------------------------

    def value(self, value: Any) -> Any:
        """A scrubbed copy of `value`, or `value` itself (the same object) when nothing changed."""
        if isinstance(value, str):
            return self._string(value)
        if isinstance(value, dict):
            return self._dict(value)
        if isinstance(value, list | tuple):
            new = [self.value(v) for v in value]
            if all(n is v for n, v in zip(new, value, strict=True)):
                return value
            return type(value)(new) if isinstance(value, tuple) else new
        if getattr(getattr(value, "dtype", None), "kind", None) == "O" and value.ndim == 1:
            # object arrays: how pyarrow hands back list columns
            new = [self.value(v) for v in value]
            if all(n is v for n, v in zip(new, value, strict=True)):
                return value
            out = value.copy()
            out[:] = new
            return out
        return value

    def _dict(self, value: dict[Any, Any]) -> dict[Any, Any]:
        changed = False
        out: dict[Any, Any] = {}
        pair = _pair_name(value)
        for k, v in value.items():
            key = self._string(k) if isinstance(k, str) else k
            if isinstance(k, str) and isinstance(v, str):
                name = pair if pair is not None and k.lower() == "value" else k
                new: Any = self._keyed(name, v)
            else:
                new = self.value(v)
            changed = changed or new is not v or key is not k
            out[key] = new
        return out if changed else value

    def _keyed(self, key: str, value: str, among: Sequence[int] | None = None) -> str:
        """A string under `key`: scrubbed, and replaced whole when the key names a secret."""
        new = self._string(value, among)
        kind = classify(key)
        if kind is None or new is not value or self._allowed(value):
            return new
        if kind.header:
            spans = [(s, e, t) for s, e, t in header_findings(value, 0)]
            return self._replace(value, spans)
        if plausible(value, kind):
            self.counts[kind.type] += 1
            if self._seen is not None:
                self._seen[value] = kind.type
            return PLACEHOLDER.format(kind.type)
        return value

    def _allowed(self, text: str) -> bool:
        return bool(self._allow) and any(
            a <= 0 and len(text) <= b for a, b in self._allow.ranges(text)
        )

    def _string(
        self, text: str, among: Sequence[int] | None = None, utf8: bytes | None = None
    ) -> str:
        """`utf8`: `text` encoded as UTF-8 where the caller has it already (an Arrow column's
        own buffer), so the prefilter need not encode it again."""
        if len(text) < MIN_SCAN_LEN:
            return text
        hits = None
        json_text = _JSON_START.match(text) is not None
        escapes = self._rules.escapes
        if json_text and self._prefilter is not None:
            found = self._prefilter.anchors(text, utf8)  # one scan: which gates, and where
            if found is not None:
                fired, by_gate = found
                hits = sorted(
                    {p for g, positions in by_gate.items() if g not in escapes for p in positions}
                )
        if hits is None:
            fired = self._fired(text, among, utf8)
        # An escape in JSON text can hide a gate, so such text is walked even when none fired.
        if self._prefilter is None:  # (`none`: every gate "fired"; look for escapes here)
            escaped = json_text and _ESCAPE.search(text) is not None
        else:
            escaped = json_text and any(g in fired for g in escapes)
        rules = self._rules.fired(fired)
        if not rules and not escaped:
            return text
        if json_text:
            out = self._json(text, fired, hits, escaped)
            if out is not None:
                return out
        if not rules:
            return text
        return self._replace(text, self._findings(text, rules, utf8))

    def _json(
        self, text: str, fired: Sequence[int], hits: list[int] | None, escaped: bool
    ) -> str | None:
        """JSON text scrubbed literal by literal (see the module docstring); None when `text`
        is not JSON after all. `hits`: a position inside each gate match (else found here);
        `escaped`: an escape that could hide a gate occurs in it (then it is parsed whole)."""
        if text.lstrip()[:1] == '"':  # a JSON string, whole: scrub what it says
            try:
                decoded = json.loads(text)
            except ValueError:
                return None
            if not isinstance(decoded, str):
                return None
            new = self._string(decoded)
            return text if new is decoded else json.dumps(new, ensure_ascii=False)
        if self._rules.always or escaped:
            return self._walk_json(text)
        if hits is None:
            hits = Context(text, self._rules).positions(fired)
        jobs: dict[tuple[int, int], tuple[str, str | None]] = {}  # literal -> (its string, key)
        i = 0
        while i < len(hits):
            p = hits[i]
            q = _open_quote(text, p)
            try:  # the literal's end and its string in one C pass, with no copy of the text
                decoded, e = _scanstring(text, q + 1, True) if q >= 0 else (None, -1)
            except ValueError:  # unterminated, a control character, a bad escape
                return None
            if e <= p:
                return None
            before, after = _prev(text, q), _next(text, e)
            if before < 0 or text[before] not in "{[,:":
                return None
            if after < len(text) and text[after] not in ":,]}":
                return None
            i = bisect.bisect_left(hits, e, i + 1)  # the next hit past this literal
            if (q, e) not in jobs:
                jobs[(q, e)] = (decoded, None)
            if after < len(text) and text[after] == ":":  # a key: its value goes by its name
                name = decoded if classify(decoded) is not None else None
                if name is None and decoded.lower() == "value":
                    name = _pair_name_before(text, q)  # {"name": "DB_PASSWORD", "value": ...}
                j = _next(text, after + 1) if name is not None else len(text)
                if j < len(text) and text[j] == '"':
                    try:
                        value, end = _scanstring(text, j + 1, True)
                    except ValueError:  # `"\H"`: not JSON after all
                        return None
                    jobs[(j, end)] = (value, name)
                    i = bisect.bisect_left(hits, end, i)
        out, done = [], 0
        outer, self._seen = self._seen, {}
        try:
            for (q, e), (decoded, key) in sorted(jobs.items()):
                # A gate in a literal's string is also in the JSON text (no escape hides one
                # here): only the gates found in the text can occur in it.
                if key is not None:
                    new = self._keyed(key, decoded, fired)
                else:
                    new = self._string(decoded, fired)
                if new is not decoded:
                    out += [text[done:q], json.dumps(new, ensure_ascii=False)]
                    done = e
        finally:
            seen, self._seen = self._seen, outer
        if outer is not None:
            outer.update(seen)  # JSON inside JSON: the outer text holds these values too
        if not out:
            return text
        out.append(text[done:])
        return self._repeated("".join(out), seen)

    def _repeated(self, text: str, seen: dict[str, str]) -> str:
        """JSON text with every other occurrence of a value redacted in one of its literals
        (the key echoed in a later tool result) replaced too. Only values JSON writes as they
        are (no quote, backslash, control or non-ASCII character) are looked for verbatim."""
        for value, type_ in seen.items():
            if len(value) < REPEAT_MIN or not _JSON_VERBATIM.fullmatch(value) or value not in text:
                continue
            n = text.count(value)
            self.counts[type_] += n
            text = text.replace(value, PLACEHOLDER.format(type_))
        return text

    def _walk_json(self, text: str) -> str | None:
        try:
            parsed = json.loads(text)
        except ValueError:
            return None
        if not isinstance(parsed, dict | list):
            return None
        new = self.value(parsed)
        if new is parsed:
            return text
        compact = '":' in text and '": ' not in text
        seps = (",", ":") if compact else (", ", ": ")
        return json.dumps(new, ensure_ascii=False, separators=seps)

    # -- datasets ------------------------------------------------------------------------------

    def frame(self, dataset: pd.DataFrame) -> tuple[pd.DataFrame, int]:
        """The dataset with every string cell (nested ones and JSON text too) scrubbed, and how
        many rows changed. Numeric/bool/datetime columns are left alone.

        A column is what a dict key is to a nested value: a CSV `db_password` column or a JSONL
        `api_key` field holds its secret bare, found by nothing but its name, so its cells are
        scrubbed as that name's values (`_keyed`), as `_dict` does for a nested key. Column
        names are scrubbed too (a token used as a header or a field name); a renamed column
        changes every row, since every written row carries its name."""
        # ~0.5 s (measured): pandas and numpy only when a dataset is scrubbed; this default
        # plugin loads with every command
        import numpy as np
        import pandas as pd

        touched = np.zeros(len(dataset), dtype=bool)
        out = dataset
        for column in dataset.columns:
            series = dataset[column]
            if not (
                series.dtype == object
                or pd.api.types.is_string_dtype(series.dtype)
                or isinstance(series.dtype, pd.CategoricalDtype)
            ):
                continue
            values = series.tolist()
            new = self._cells(column, series, values)
            changed = np.fromiter((n is not v for n, v in zip(new, values, strict=True)), bool)
            if not changed.any():
                continue
            touched |= changed
            if out is dataset:
                out = dataset.copy()
            out[column] = _rebuilt(series, new, changed)
        names = self._column_names(list(dataset.columns))
        if names is not None:
            out = out.set_axis(names, axis=1)
            touched[:] = True
        return out, int(touched.sum())

    def _cells(self, column: Any, series: pd.Series, values: list[Any]) -> list[Any]:
        """A string column's cells scrubbed: as the values of a secret-named column (the
        `_dict` rules: strings by `_keyed`, anything else as a value), else on their own."""
        if isinstance(column, str) and classify(column) is not None:
            return [self._keyed(column, v) if isinstance(v, str) else self.value(v) for v in values]
        utf8 = _utf8_cells(series)
        if utf8 is None:
            return [self.value(v) for v in values]
        # str cells scanned on the column's own UTF-8 bytes (no encoding again)
        return [
            self._string(v, utf8=b) if isinstance(v, str) else self.value(v)
            for v, b in zip(values, utf8, strict=True)
        ]

    def _column_names(self, columns: list[Any]) -> list[Any] | None:
        """`columns` with each name scrubbed, or None when none changed. A name is scrubbed
        (and counted) once per scrubber, though a streamed run scrubs many frames of the same
        columns; a redacted name that collides with another column gets a `_2`, `_3` suffix,
        the same in every frame of the same columns."""
        new = []
        for name in columns:
            if not isinstance(name, str):
                new.append(name)
                continue
            scrubbed = self._names.get(name)
            if scrubbed is None:
                scrubbed = self._names[name] = self._string(name)
            new.append(scrubbed)
        if all(n == c for n, c in zip(new, columns, strict=True)):
            return None
        taken = {c for n, c in zip(new, columns, strict=True) if n == c}
        for i, (n, c) in enumerate(zip(new, columns, strict=True)):
            if n == c:
                continue
            unique, k = n, 2
            while unique in taken:
                unique, k = f"{n}_{k}", k + 1
            taken.add(unique)
            new[i] = unique
        return new

    @property
    def columns_renamed(self) -> int:
        """How many distinct column names this scrubber redacted (for the run's report)."""
        return sum(new != old for old, new in self._names.items())


def _utf8_cells(series: pd.Series) -> list[bytes | None] | None:
    """Each cell of an Arrow-backed string column as its UTF-8 bytes, read from the column's
    own buffers (a zero-copy cast to binary): the prefilter scans UTF-8, and encoding every
    transcript string again was the largest single cost of scrubbing one (measured, ~25% of its
    instructions). None for any other column."""
    import pandas as pd

    if not (isinstance(series.dtype, pd.StringDtype) and hasattr(series.array, "__arrow_array__")):
        return None
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        data = series.array.__arrow_array__()
        binary = pa.large_binary() if pa.types.is_large_string(data.type) else pa.binary()
        return pc.cast(data, binary).to_pylist()
    except (TypeError, ValueError, pa.ArrowException):
        return None


def _rebuilt(series: pd.Series, new: list[Any], changed: Any) -> pd.Series:
    """`series` with its changed cells replaced by `new`'s. An Arrow-backed string column (the
    default string dtype since pandas 3) keeps its unchanged cells as Arrow data and converts
    only the changed ones (pyarrow's `replace_with_mask`): converting a whole transcript column
    back from Python strings was about a fifth of scrubbing it (measured)."""
    import pandas as pd

    if isinstance(series.dtype, pd.StringDtype) and hasattr(series.array, "__arrow_array__"):
        # pyarrow backs this dtype, so it imports here
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            data = series.array.__arrow_array__()
            values = [n for n, c in zip(new, changed, strict=True) if c]
            replaced = pc.replace_with_mask(data, pa.array(changed), pa.array(values, data.type))
            return pd.Series(type(series.array)(replaced), index=series.index, dtype=series.dtype)
        except (TypeError, ValueError, pa.ArrowException):
            pass  # a layout this does not know: convert every cell, as for any other dtype
    dtype = object if isinstance(series.dtype, pd.CategoricalDtype) else series.dtype
    return pd.Series(new, index=series.index, dtype=dtype)


def _pair_name(value: dict[Any, Any]) -> str | None:
    """The secret name a `{"name": "DB_PASSWORD", "value": ...}` dict holds its value under."""
    if not any(isinstance(k, str) and k.lower() == "value" for k in value):
        return None
    for k, v in value.items():
        if isinstance(k, str) and k.lower() in _PAIR_KEYS and isinstance(v, str) and classify(v):
            return v
    return None


@lru_cache(maxsize=8)
def _prefilter(backend: str | None) -> Any:
    if backend == "none":
        return None
    return prefilters.build(ruleset().gates, backend)


def detector_types() -> list[str]:
    """Every placeholder type this build can emit (for docs and tests)."""
    types = {r.type for r in ruleset().rules}
    return sorted(types | {"password", "secret", "aws-secret-key", "basic-auth", "bearer-token"})
