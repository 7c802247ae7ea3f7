"""Which gates occur in a string, in one pass: the prefilter in front of every rule.

A gate is a small regex (a token prefix, a full token shape, a keyword) that every match of its
rule contains. The scrubber runs a rule only on strings where one of its gates occurs, and the
rule then checks its gates again itself, so a backend may report more gates than occur (only
costing time) but never fewer: the output does not depend on the backend.

Backends, fastest first, chosen at import: Hyperscan (Intel's multi-regex DFA engine, ~1.5 GB/s,
one call per string scans for every gate at once), RE2's `Set` (google-re2, ~400 MB/s), and plain
`re` (one search per gate; where neither wheel exists). Gates use ASCII classes only and are
matched with ASCII semantics everywhere (`re.ASCII`; Hyperscan without UCP; RE2's classes are
ASCII), on UTF-8 for the DFA engines so `.` and negated classes see characters, not bytes.
"""

from __future__ import annotations

import hashlib
import os
import platform
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

BACKENDS = ("hyperscan", "re2", "python")


@dataclass(frozen=True)
class Gate:
    """`pattern` (ASCII, no anchors or lookarounds); `caseless`; `words`: literals one of which
    starts every match (lowercase when caseless), so a match can be found by looking up the
    words (memchr speed) and trying the pattern only there."""

    pattern: str
    caseless: bool = False
    words: tuple[str, ...] = ()
    tail: bool = False  # matches run on past the name, over quotes (see `_name_end`)
    needs: tuple[str, ...] = ()  # literals every match contains (a quick "no" for `re`)

    def compile(self) -> re.Pattern[str]:
        return re.compile(self.pattern, re.ASCII | (re.IGNORECASE if self.caseless else 0))


@lru_cache(maxsize=512)
def literal(pattern: str) -> str | None:
    """The text a gate pattern matches when it is a plain literal (`://`, `PRIVATE KEY`)."""
    if re.fullmatch(r"(?:[A-Za-z0-9 _\-~:/=@%!,;'\"#&<>]|\\[^A-Za-z0-9])*", pattern) is None:
        return None
    return re.sub(r"\\(.)", r"\1", pattern)


_LITERAL_CHAR = re.compile(r"[A-Za-z0-9 _\-~:/=@%!,;'\"#&<>]|\\[^A-Za-z0-9]")
_TOP_ALTERNATION = re.compile(r"\(\?:((?:[A-Za-z0-9_]+\|)+[A-Za-z0-9_]+)\)")


def leading_words(pattern: str) -> tuple[str, ...]:
    """Literals one of which starts every match of `pattern` (its leading literal text, or the
    branches of a leading `(?:a|b|c)` of plain words); () when it starts otherwise."""
    alternation = _TOP_ALTERNATION.match(pattern)
    if alternation is not None:
        branches = alternation.group(1).split("|")
        rest = pattern[alternation.end() :]
        if rest[:1] in ("?", "*", "{"):
            return ()
        return tuple(branches)
    chars, i = [], 0
    while (m := _LITERAL_CHAR.match(pattern, i)) is not None:
        chars.append(m.group()[-1])
        i = m.end()
    if pattern[i : i + 1] in ("?", "*", "{") and chars:
        chars.pop()  # `ab?`: the b is optional
    return ("".join(chars),) if len(chars) >= 2 else ()


class PythonPrefilter:
    """`re` on the UTF-8 bytes: a gate's words are looked up with `bytes.find` (memchr speed;
    `bytes.lower()` folds ASCII only, as the gates do) and its regex tried only where one
    starts; a gate without words is searched whole, once what it `needs` is found."""

    name = "python"

    def anchors(
        self, text: str, utf8: bytes | None = None
    ) -> tuple[set[int], dict[int, list[int]]] | None:
        return None  # the scrubber finds gates and their positions itself

    def __init__(self, gates: Sequence[Gate]) -> None:
        self.gates = list(gates)
        self._compiled = [g.compile() for g in gates]
        self._bytes = [
            re.compile(g.pattern.encode(), re.IGNORECASE if g.caseless else 0) for g in gates
        ]
        self._words = [tuple(w.encode() for w in g.words or _literal_words(g)) for g in gates]

    def fired(
        self, text: str, among: Sequence[int] | None = None, utf8: bytes | None = None
    ) -> set[int]:
        """The gates that occur in `text` (`utf8`: its UTF-8 encoding, where known)."""
        try:
            data = text.encode("utf-8") if utf8 is None else utf8
        except UnicodeEncodeError:  # lone surrogates: search the text itself
            return {
                i
                for i in (range(len(self.gates)) if among is None else among)
                if self._compiled[i].search(text)
            }
        lower: bytes | None = None
        out = set()
        for i in range(len(self.gates)) if among is None else among:
            gate, words, compiled = self.gates[i], self._words[i], self._bytes[i]
            if gate.caseless:
                lower = data.lower() if lower is None else lower
            hay = lower if gate.caseless else data
            assert hay is not None
            if words:
                if any(_starts_match(hay, data, word, compiled) for word in words):
                    out.add(i)
            elif all(n.encode() in data for n in gate.needs) and compiled.search(data):
                out.add(i)
        return out


def _literal_words(gate: Gate) -> tuple[str, ...]:
    lit = literal(gate.pattern)
    return () if lit is None else (lit.lower() if gate.caseless else lit,)


def _starts_match(hay: bytes, data: bytes, word: bytes, compiled: re.Pattern[bytes]) -> bool:
    i = hay.find(word)
    while i != -1:
        if compiled.match(data, i):
            return True
        i = hay.find(word, i + 1)
    return False


class HyperscanPrefilter:
    name = "hyperscan"

    def __init__(self, gates: Sequence[Gate]) -> None:
        import hyperscan  # optional (not on every platform): `build` falls back when it fails

        self._hs = hyperscan
        self.gates = list(gates)
        self._fallback = PythonPrefilter(gates)
        self._db = _database(hyperscan, self.gates, hyperscan.HS_FLAG_SINGLEMATCH)
        self._local = threading.local()  # scratch space is per thread
        self._ends: Any = None

    def fired(
        self, text: str, among: Sequence[int] | None = None, utf8: bytes | None = None
    ) -> set[int]:
        try:
            data = text.encode("utf-8") if utf8 is None else utf8
        except UnicodeEncodeError:  # lone surrogates: not valid UTF-8, which Hyperscan needs
            return self._fallback.fired(text, among)
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = self._hs.Scratch(self._db)
        out: set[int] = set()
        self._db.scan(data, match_event_handler=_collect, context=out, scratch=scratch)
        return out

    def anchors(
        self, text: str, utf8: bytes | None = None
    ) -> tuple[set[int], dict[int, list[int]]] | None:
        """One scan: the gates that occur, and for each gate a sorted position inside each of
        its matches (the match's last character, or for a gate with a `tail` the last
        character of the name before it). None where Hyperscan cannot scan `text`.
        `utf8`: `text` encoded as UTF-8, where the caller has it."""
        try:
            data = text.encode("utf-8") if utf8 is None else utf8
        except UnicodeEncodeError:
            return None
        db, scratch = self._ends_db()
        ends: list[tuple[int, int]] = []  # (byte offset just after a match, gate)

        def collect(gate: int, _start: int, end: int, _flags: int, _ctx: Any) -> None:
            ends.append((end, gate))

        db.scan(data, match_event_handler=collect, scratch=scratch)
        ends.sort()
        ascii_text = text.isascii()
        byte = char = 0
        out: dict[int, list[int]] = {}
        for offset, gate in ends:
            if not ascii_text:  # UTF-8 byte offsets (match ends: character boundaries) -> str
                char += len(data[byte:offset].decode("utf-8"))
                byte = offset
            i = (offset if ascii_text else char) - 1  # the match's last character
            out.setdefault(gate, []).append(_name_end(text, i) if self.gates[gate].tail else i)
        for gate, positions in out.items():
            out[gate] = sorted(set(positions))
        return set(out), out

    def _ends_db(self) -> tuple[Any, Any]:
        """The gates compiled again to report every match end, on first use."""
        hs = self._hs
        if self._ends is None:
            self._ends = _database(hs, self.gates, 0)
        scratch = getattr(self._local, "ends_scratch", None)
        if scratch is None:
            scratch = self._local.ends_scratch = hs.Scratch(self._ends)
        return self._ends, scratch


_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


def _name_end(text: str, i: int) -> int:
    """From the `:`/`=` (or quote) that ends a name gate's match, back over an operator (`.=`,
    `?=`), quotes, brackets and an index (`name[25] =`), spaces, `\\t` escapes and a
    spaced ` - ` to the name's last character."""
    i -= 1
    while i > 0 and text[i] in "?.+!:=":
        i -= 1
    while i > 0:
        c = text[i]
        if c == "]":
            j = text.rfind("[", max(0, i - 8), i)
            i = j - 1 if j > 0 and (text[j + 1 : i].isdigit() or j + 1 == i) else i - 1
        elif c not in _NAME_CHARS or (c == "t" and text[i - 1] == "\\"):
            i -= 1
        elif c == "-" and text[i - 1] in " \t" and text[i + 1 : i + 2] in (" ", "\t"):
            i -= 1  # `name - 'value'`
        else:
            break
    return i


def _database(hs: Any, gates: Sequence[Gate], flags: int) -> Any:
    """The gates compiled by Hyperscan (UTF-8, block mode, `flags` on each), from the user's
    cache when an earlier process compiled the same ones.

    Why a cache: compiling the ~300 gates twice (the set that says which gates fire, and the
    one that reports every match end) took ~0.3 s of every command's start-up (measured),
    longer than scrubbing a 50 MB corpus; loading the serialized database takes a millisecond.
    The file is keyed by the patterns, their flags, the hyperscan binding's version and the
    machine, so an edited rule or another build never loads a stale one; Hyperscan refuses a
    database built for another platform (`loadb` raises), and then it is compiled again. A
    cache that cannot be read or written only costs the compile."""
    from bashgym_scrubbers_secrets.cache import cache_file, write_atomically

    per_gate = [hs.HS_FLAG_UTF8 | flags | _caseless(hs, g) for g in gates]
    key = hashlib.sha256(
        repr((getattr(hs, "__version__", "?"), platform.machine(), per_gate,
              [g.pattern for g in gates])).encode()
    ).hexdigest()[:32]  # fmt: skip
    path = cache_file("hyperscan", f"gates-{key}.db")
    try:
        return hs.loadb(path.read_bytes(), hs.HS_MODE_BLOCK)
    except (OSError, hs.error):
        pass
    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    db.compile(
        expressions=[g.pattern.encode() for g in gates],
        ids=list(range(len(gates))),
        elements=len(gates),
        flags=per_gate,
    )
    write_atomically(path, hs.dumpb(db))
    return db


def _caseless(hs: Any, gate: Gate) -> int:
    return hs.HS_FLAG_CASELESS if gate.caseless else 0


def _collect(gate: int, _start: int, _end: int, _flags: int, out: set[int]) -> None:
    out.add(gate)


class Re2Prefilter:
    name = "re2"

    def anchors(
        self, text: str, utf8: bytes | None = None
    ) -> tuple[set[int], dict[int, list[int]]] | None:
        return None

    def __init__(self, gates: Sequence[Gate]) -> None:
        import re2  # optional, as hyperscan above

        self.gates = list(gates)
        self._fallback = PythonPrefilter(gates)
        self._set = re2.Set.SearchSet(re2.Options())
        for gate in gates:
            self._set.Add(("(?i)" if gate.caseless else "") + gate.pattern)
        self._set.Compile()

    def fired(
        self, text: str, among: Sequence[int] | None = None, utf8: bytes | None = None
    ) -> set[int]:
        try:  # (RE2 takes the str: its binding encodes it)
            return set(self._set.Match(text) or ())
        except UnicodeError:
            return self._fallback.fired(text, among)


_CLASSES = {"hyperscan": HyperscanPrefilter, "re2": Re2Prefilter, "python": PythonPrefilter}


def available() -> list[str]:
    """The backends that import here, fastest first."""
    out = []
    for name, module in (("hyperscan", "hyperscan"), ("re2", "re2")):
        try:
            __import__(module)
        except ImportError:
            continue
        out.append(name)
    return [*out, "python"]


def build(gates: Sequence[Gate], backend: str | None = None) -> PythonPrefilter:
    """A prefilter over `gates`: `backend` if given, else `BASHGYM_SCRUB_PREFILTER` if set,
    else the fastest available. An explicitly requested backend that cannot load raises."""
    wanted = backend or os.environ.get("BASHGYM_SCRUB_PREFILTER") or None
    if wanted is not None:
        if wanted not in _CLASSES:
            raise ValueError(f"unknown prefilter backend {wanted!r} (one of {', '.join(BACKENDS)})")
        return _CLASSES[wanted](gates)  # type: ignore[return-value]
    for name in available():
        try:
            return _CLASSES[name](gates)  # type: ignore[return-value]
        except Exception:  # noqa: BLE001 -- a broken native wheel: use the next backend
            continue
    return PythonPrefilter(gates)
