"""Find secrets in strings, frames and JSON text, and replace each with a typed placeholder.

Why it matters: agent transcripts are full of secrets (an agent runs `cat .env`, echoes
`$OPENAI_API_KEY`, writes a config with a database URL), and training data gets published. The
engine runs this scrubber over seed rows before any pipeline sees them, over every row before
the sinks, and over event text; with scrubbing on and no scrubber installed it refuses to write.

How it finds secrets:
- detect-secrets' own detectors (AWS, GitHub, GitLab, Slack, Stripe, OpenAI, private keys, basic
  auth in URLs, JWT, the keyword detector, and the rest of its regex detectors). We use their
  compiled patterns (`plugin.denylist`) with `finditer` instead of `scan_line`/`analyze_string`:
  those return secret *values*, not positions, go through global settings, and for some plugins
  return only a capture group (GitHubTokenDetector yields just "ghp"), which cannot drive a
  redaction. Plugins are never asked to `verify()`: that would send the secret over the network.
- the entropy detectors (Base64/Hex high entropy) are left out on purpose: they flag git SHAs,
  UUIDs, content hashes and base64 blobs, which coding transcripts are full of and which are
  worth keeping in training data. So is IPPublicDetector (an IP address is not a credential).
  The price: a secret with no known prefix and no secret-looking name next to it is missed.
- a few extra regexes for key formats detect-secrets 1.5 does not know (each says why below),
  a PEM-block extension (detect-secrets only matches the `BEGIN ... PRIVATE KEY` header) and a
  `.env` rule (`NAME=value` where NAME looks secret) for unquoted values its keyword detector
  skips.

Speed: Python's `re` scans a regex that begins with a literal at memchr speed, but one that
begins with a character class or an alternation tries it at every position. So each detector
has gates (literal-led regexes); its patterns run only if a gate matches, and keyword-led ones
only on the lines around each match. A short string (most strings of a trace: ids, names,
short turns) is first tried against all gates as one alternation and skipped if none occurs.
JSON strings (the `trace` column, tool-call arguments) are parsed, walked and re-serialized
(only when something changed): scrubbing the JSON text itself would miss `.env` lines and PEM
blocks whose newlines are `\\n` escapes, and a replacement could cut an escape in half. Walking
parsed values keeps the output valid JSON and the Trace valid (only string values change).
Measured (10 MB, one core): ~25 MB/s on source-code cells, ~15 MB/s on code-heavy trace rows,
against ~150-250 MB/s to read the same rows from Parquet and ~200 MB/s to json.loads them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

PLACEHOLDER = "[REDACTED:{}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")  # a token regex with a fixed length may stop early
MIN_SCAN_LEN = 8  # no detector can match a shorter string


@dataclass
class Detector:
    """One kind of secret: its placeholder type, its regexes and the gates that guard them.

    `gates`: regexes that each begin with a literal (so `re` finds them with a fast substring
    search); the patterns run only where one matches: anywhere in the string, or only on the
    lines around each gate match when `windowed` (for regexes that begin with a character class
    or an alternation, which `re` must try at every position). `lower`: gates match the
    lowercased text. `group`: redact the capture group(s), not the whole match (only the
    password of a URL). `extend`: widen the match over the rest of a token (fixed-length
    regexes stop early on longer keys). `span` widens a match its own way; `check` rejects one.
    `finder` replaces `patterns` for rules that are more than a regex (.env lines, keywords).
    """

    type: str
    patterns: tuple[re.Pattern[str], ...] = ()
    gates: tuple[str, ...] = ()
    lower: bool = False
    windowed: bool = False
    priority: int = 60
    group: bool = False
    extend: bool = False
    check: Callable[[str], bool] | None = None
    span: Callable[[str, int, int], tuple[int, int]] | None = None
    finder: Callable[[str, list[tuple[int, int]]], Iterable[tuple[int, int, str]]] | None = None
    gate_res: tuple[re.Pattern[str], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.gate_res = tuple(re.compile(g) for g in self.gates)

    def regions(self, text: str, lower: str) -> list[tuple[int, int]]:
        """Where the patterns must run: [] when no gate matches."""
        if not self.gate_res:
            return [(0, len(text))]
        hay = lower if self.lower else text
        if self.windowed:
            return _windows(text, [m.start() for g in self.gate_res for m in g.finditer(hay)])
        return [(0, len(text))] if any(g.search(hay) for g in self.gate_res) else []


WINDOW = 512  # chars either side of a gate match that a windowed detector looks at


def _windows(text: str, hits: list[int]) -> list[tuple[int, int]]:
    """Merged regions: each hit's line, clipped to WINDOW chars either side."""
    spans = []
    for i in hits:
        nl = text.rfind("\n", max(0, i - WINDOW), i)
        lo = nl + 1 if nl != -1 else max(0, i - WINDOW)
        hi = text.find("\n", i, i + WINDOW)
        spans.append((lo, hi if hi != -1 else min(len(text), i + WINDOW)))
    return _merge(spans)


# ---- detect-secrets plugins ------------------------------------------------------------------

_PEM_END = re.compile(r"-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,-]*")  # a block cut short: eat what looks like body


def _pem_span(text: str, start: int, end: int) -> tuple[int, int]:
    """detect-secrets matches only the `BEGIN ... PRIVATE KEY` header: widen to the block."""
    begin = text.rfind("-----", max(0, start - 6), start)
    start = begin if begin != -1 else start
    close = _PEM_END.search(text, end, end + 20_000)
    if close is not None:
        return start, close.end()
    body = _PEM_BODY.match(text, end, end + 20_000)
    return start, body.end() if body else end


_JWT_SIGNATURE = re.compile(r"[A-Za-z0-9_\-+/=]*")


def _jwt_span(text: str, start: int, end: int) -> tuple[int, int]:
    """detect-secrets' JWT regex ends lazily, so its match stops before the signature."""
    if text[end - 1 : end] != "." and text[end : end + 1] == ".":
        end += 1
    if text[end - 1 : end] == ".":
        end = _JWT_SIGNATURE.match(text, end).end()  # type: ignore[union-attr]
    return start, end


def _jwt_check(secret: str) -> bool:
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return JwtTokenDetector.is_formally_valid(".".join(secret.split(".")[:2]))


def _artifactory_check(secret: str) -> bool:
    """Its `AP[0-9A-F]...` password pattern also fits CamelCase names (`APCompressionTool`);
    real Artifactory keys are long and carry digits."""
    return len(secret) >= 20 and any(c.isdigit() for c in secret)


def _url_password_check(secret: str) -> bool:
    """`s3://{key}:{secret}@bucket` in an f-string is a template, not a password."""
    return _plausible_value(secret)


# detect-secrets plugin class -> how to run it. Left out on purpose: the entropy detectors and
# IPPublicDetector (see the module docstring), and the IBM Cloudant/IAM/COS and SoftLayer
# detectors: keyword-led regexes (`(ibm|cloud|)_?(key|pass|token) = '...'`) that would run on
# every line mentioning a key, a pass or a token, for `name = 'value'` shapes that the keyword
# and .env rules below already cover (untyped).
_DETECT_SECRETS: dict[str, dict[str, Any]] = {
    "AWSKeyDetector": {},  # split below: access key ids vs. `aws ... key = '40 chars'`
    "GitHubTokenDetector": {"type": "github-token", "gates": ("gh[pousr]_",), "extend": True},
    # GitLab (glpat-, gldt-, glrt-, ...) is covered here since detect-secrets 1.5: no extra regex.
    "GitLabTokenDetector": {"type": "gitlab-token", "gates": ("gl", "GR1348941"), "extend": True},
    "SlackDetector": {"type": "slack-token", "gates": ("xox", "XOX", "hooks\\.slack\\.com")},
    "StripeDetector": {"type": "stripe-key", "gates": ("k_live_",), "extend": True},
    "OpenAIDetector": {"type": "openai-api-key", "gates": ("T3BlbkFJ",), "extend": True},
    "BasicAuthDetector": {
        "type": "password",
        "gates": ("://",),
        "group": True,
        "check": _url_password_check,
    },
    "JwtTokenDetector": {"type": "jwt", "gates": ("eyJ",), "check": _jwt_check, "span": _jwt_span},
    "PrivateKeyDetector": {
        "type": "private-key",
        "gates": ("PRIVATE KEY", "PuTTY-User-Key"),
        "priority": 90,
        "span": _pem_span,
    },
    "ArtifactoryDetector": {
        "type": "artifactory-token",
        "gates": ("AKC[a-zA-Z0-9]{10}", "AP[0-9A-F][a-zA-Z0-9]{8}"),
        "windowed": True,
        "check": _artifactory_check,
    },
    "AzureStorageKeyDetector": {"type": "azure-storage-key", "gates": ("AccountKey=",)},
    "DiscordBotTokenDetector": {
        "type": "discord-token",
        "gates": ("\\.[a-zA-Z0-9_-]{6}\\.",),
        "windowed": True,
        "extend": True,
    },
    "MailchimpDetector": {"type": "mailchimp-key", "gates": ("-us[0-9]",), "windowed": True},
    "NpmDetector": {"type": "npm-token", "gates": ("_authToken",), "group": True},
    "PypiTokenDetector": {"type": "pypi-token", "gates": ("pypi-",), "extend": True},
    "SendGridDetector": {"type": "sendgrid-key", "gates": ("SG\\.",), "extend": True},
    "SquareOAuthDetector": {"type": "square-oauth-secret", "gates": ("sq0csp-",)},
    "TelegramBotTokenDetector": {
        "type": "telegram-token",
        "gates": (":[0-9A-Za-z_-]{35}",),
        "windowed": True,
    },
    "TwilioKeyDetector": {
        "type": "twilio-key",
        "gates": ("AC[a-z0-9]{32}", "SK[a-z0-9]{32}"),
        "extend": True,
    },
}
_SKIPPED = {
    "Base64HighEntropyString",
    "HexHighEntropyString",
    "IPPublicDetector",
    "KeywordDetector",  # wired below, windowed, with value filters
    "CloudantDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "SoftlayerDetector",
}


def _detect_secrets_detectors() -> list[Detector]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    out = []
    for plugin_class in get_mapping_from_secret_type_to_class().values():
        name = plugin_class.__name__
        patterns = tuple(getattr(plugin_class, "denylist", ()) or ())
        if name in _SKIPPED or not patterns:
            continue
        if name == "AWSKeyDetector":
            out.append(
                Detector(
                    "aws-access-key",
                    patterns[:1],
                    gates=("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
                    extend=True,
                )
            )
            out.append(
                Detector(
                    "aws-secret-key",
                    patterns[1:],
                    gates=("aws",),
                    lower=True,
                    windowed=True,
                    group=True,
                )
            )
            continue
        spec = _DETECT_SECRETS.get(name)
        if spec is None:  # a detector from a later release: run it on everything, typed by name
            slug = re.sub(r"[^a-z0-9]+", "-", plugin_class.secret_type.lower()).strip("-")
            out.append(Detector(slug, patterns, group=any(p.groups for p in patterns)))
            continue
        out.append(Detector(patterns=patterns, **spec))
    return out


# ---- formats detect-secrets 1.5 does not know ------------------------------------------------


def _extra_detectors() -> list[Detector]:
    return [
        # Anthropic: no detector in detect-secrets at all.
        Detector(
            "anthropic-api-key",
            (re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}"),),
            gates=("sk-ant-",),
            priority=70,
        ),
        # OpenAI project/service-account/admin keys: detect-secrets' OpenAI regex needs the
        # `T3BlbkFJ` marker with exactly 20 alphanumerics either side, which these keys (with
        # `-`/`_` in those stretches) do not reliably have.
        Detector(
            "openai-api-key",
            (re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),),
            gates=("sk-",),
            priority=70,
        ),
        # HuggingFace user access tokens: no detector in detect-secrets.
        Detector(
            "huggingface-token",
            (re.compile(r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}"),),
            gates=("hf_",),
            priority=70,
            extend=True,
        ),
        # Google API keys (Gemini, Maps, Firebase): no detector in detect-secrets.
        Detector(
            "google-api-key",
            (re.compile(r"AIza[0-9A-Za-z_\-]{35}"),),
            gates=("AIza",),
            priority=70,
            extend=True,
        ),
        # NVIDIA API catalog / NGC keys: no detector in detect-secrets.
        Detector(
            "nvidia-api-key",
            (re.compile(r"nvapi-[A-Za-z0-9_\-]{40,}"),),
            gates=("nvapi-",),
            priority=70,
        ),
        # GitHub fine-grained PATs: detect-secrets knows only ghp_/gho_/ghu_/ghs_/ghr_.
        Detector(
            "github-token",
            (re.compile(r"github_pat_[A-Za-z0-9_]{22,}"),),
            gates=("github_pat_",),
            priority=70,
        ),
        # A PEM block whose header detect-secrets does not list (ENCRYPTED PRIVATE KEY, ...).
        Detector(
            "private-key",
            (re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"),),
            gates=("PRIVATE KEY",),
            priority=90,
            span=_pem_span,
        ),
        Detector(
            "secret",
            gates=("KEY", "TOKEN", "SECRET", "PASS", "PWD", "CREDENTIAL"),
            windowed=True,
            priority=40,
            finder=_env_matches,
        ),
        Detector(
            "secret",
            gates=_KEYWORD_GATES,
            lower=True,
            windowed=True,
            priority=30,
            finder=_keyword_matches,
        ),
    ]


# ---- secret-looking names: .env lines, JSON keys, the keyword detector ----------------------

_SECRET_WORDS = {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PWD"}
_SECRET_WORDS |= {"CREDENTIAL", "CREDENTIALS", "PASSPHRASE"}
_PASSWORD_WORDS = {"PASSWORD", "PASSWD", "PASS", "PWD", "PASSPHRASE"}
# A last word that says the value is *about* a secret, not the secret (SSH_KEY_PATH, ...).
_NOT_SECRET_LAST = {"PATH", "FILE", "DIR", "NAME", "ID", "TYPE", "LEN", "LENGTH", "SIZE", "URL"}
_NOT_SECRET_LAST |= {"HOST", "PORT", "USER", "USERNAME", "ENV", "VAR", "FIELD", "HEADER", "ARN"}
_NOT_SECRET_LAST |= {"PREFIX", "ALGORITHM", "ALG", "TTL", "EXPIRY", "COUNT", "LIMIT", "MODE"}
_NOT_SECRET_LAST |= {"REGEX", "PATTERN", "HASH", "FORMAT", "SCHEME", "ENDPOINT", "KIND"}
_NOT_SECRET_FIRST = {"PUBLIC", "PUBLISHABLE", "MAX", "MIN", "NUM"}


@lru_cache(maxsize=4096)
def secret_name_type(name: str, *, strict: bool = False) -> str | None:
    """`password`/`secret` when `name` (API_KEY, db-password) names a secret, else None.

    `strict` (JSON keys): a bare `key` or `token` does not count, as in `{"key": "ArrowUp"}`.
    """
    words = [w for w in re.split(r"[_\-.\s]+", name.upper()) if w]
    if not words or words[-1] in _NOT_SECRET_LAST or words[0] in _NOT_SECRET_FIRST:
        return None
    hits = [w for w in words if w in _SECRET_WORDS]
    if not hits:
        return None
    if strict and len(words) == 1 and words[0] in {"KEY", "TOKEN"}:
        return None
    return "password" if any(w in _PASSWORD_WORDS for w in hits) else "secret"


_NOT_A_VALUE = re.compile(
    r"""^(?:true|false|none|null|nil|undefined|yes|no|\d+|\*+|x+|\.+|changeme|redacted
    |your[-_a-z]*|<.*>|\{.*\}|\$.*|%.*%|.*\$\{.*|os\.environ.*|process\.env.*)$""",
    re.I | re.X,
)


def _plausible_value(value: str) -> bool:
    """Not a reference, template, placeholder, flag or number (detect-secrets' own heuristics
    plus a few for .env/JSON values)."""
    from detect_secrets.filters.heuristic import is_sequential_string

    v = value.strip()
    return (
        len(v) >= 4
        and not PLACEHOLDER_RE.fullmatch(v)
        and not _NOT_A_VALUE.match(v)
        and any(c.isalnum() for c in v)
        and not is_sequential_string(v)
    )


_ENV_LINE = re.compile(
    r"""^[ \t]*(?:export[ \t]+)?(?P<name>[A-Z][A-Z0-9_]*)=
    (?:"(?P<dq>[^"\n]*)"|'(?P<sq>[^'\n]*)'|(?P<bare>[^\s"'\#;|&()`]+))""",
    re.M | re.X,
)


def _env_matches(text: str, regions: list[tuple[int, int]]) -> Iterable[tuple[int, int, str]]:
    """`.env`/shell lines, `NAME=value` with no spaces around `=` (so `x = f(y)` in code is not
    one), where NAME names a secret: detect-secrets' keyword detector needs quotes."""
    for lo, hi in regions:
        for m in _ENV_LINE.finditer(text, lo, hi):
            type_ = secret_name_type(m.group("name"))
            group = next(g for g in ("dq", "sq", "bare") if m.group(g) is not None)
            if type_ and _plausible_value(m.group(group)):
                yield m.start(group), m.end(group), type_


@lru_cache(maxsize=1)
def _keyword_table() -> tuple[re.Pattern[str], list[tuple[re.Pattern[str], int]], list]:
    """detect-secrets' KeywordDetector regexes for quoted values (`password = "..."`,
    `"api_key": "..."`): the table it uses when it does not know the file type. Its unquoted
    (config-file) table is left out: in prose it takes `password: see the docs` for a secret.

    Split for speed: the regexes that begin with the keyword are tried (`match`) only where a
    keyword starts, found by one scan, instead of each scanning the text.
    """
    from detect_secrets.plugins.keyword import (
        DENYLIST_REGEX,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
    )

    starts = re.compile(DENYLIST_REGEX, re.I)
    led = [(r, g) for r, g in QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP.items()]
    keyword_led = [(r, g) for r, g in led if r.pattern.startswith(DENYLIST_REGEX)]
    others = [(r, g) for r, g in led if not r.pattern.startswith(DENYLIST_REGEX)]
    return starts, keyword_led, others


# Where detect-secrets' keyword regexes can match: its DENYLIST reduced to five literals (fewer
# scans beat narrower windows: each gate is one pass over the text).
_KEYWORD_GATES = ("key", "pass", "pwd", "secret", "contrase")


def _keyword_matches(text: str, regions: list[tuple[int, int]]) -> Iterable[tuple[int, int, str]]:
    starts, keyword_led, others = _keyword_table()
    for lo, hi in regions:
        if not _QUOTE.search(text, lo, hi):
            continue
        matches = [
            (m, g)
            for k in starts.finditer(text, lo, hi)
            for r, g in keyword_led
            if (m := r.match(text, k.start(), hi)) is not None
        ]
        matches += [(m, g) for r, g in others for m in r.finditer(text, lo, hi)]
        for m, group in matches:
            value = m.group(group)
            if not value or not _plausible_value(value) or _WORDS_ONLY.match(value):
                continue
            words = m.group(0).lower()
            type_ = "password" if ("pass" in words or "pwd" in words) else "secret"
            yield m.start(group), m.end(group), type_


# In code, `api_key = "api_key"`, `PASS = "pass"` or `key: "UserAPIKeyAuth | None"` (enum
# values, header names, type names in quotes) is the keyword detector's main false positive. A
# quoted value with no digit, made of letters, spaces and name punctuation only, is taken for a
# name, not a secret: a letters-only password next to a secret-looking name in code is missed,
# which we accept to keep ordinary code intact in training data.
_WORDS_ONLY = re.compile(r"^[A-Za-z_\-.:/ |`,()\[\]]+$")

_QUOTE = re.compile("['\"`]")  # every keyword regex used needs a quoted value


# ---- the scrubber ---------------------------------------------------------------------------


@dataclass
class _Allow:
    literals: tuple[str, ...]
    patterns: tuple[re.Pattern[str], ...]

    @classmethod
    def parse(cls, entries: Sequence[str]) -> _Allow:
        literals = tuple(e for e in entries if not e.startswith("re:") and e)
        patterns = tuple(re.compile(e[3:]) for e in entries if e.startswith("re:"))
        return cls(literals, patterns)

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


@dataclass
class Scrubber:
    """Finds secrets in strings (and everything nested in lists, dicts and JSON text) and
    replaces each with a typed placeholder, counting what it redacted per type.

    `allow`: literal strings, or regexes written `re:PATTERN`; a finding inside a match of one
    is kept as-is.
    """

    allow: Sequence[str] = ()
    counts: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._allow = _Allow.parse(self.allow)
        self._detectors = _detectors()

    # -- text ----------------------------------------------------------------------------------

    def findings(
        self, text: str, detectors: Sequence[Detector] | None = None
    ) -> list[tuple[int, int, str]]:
        """Non-overlapping (start, end, type) spans to redact, in text order."""
        if len(text) < MIN_SCAN_LEN:
            return []
        lower = text.lower()
        if len(text) < QUICK_REJECT_LEN and (quick := _quick_reject()) and not quick.search(lower):
            return []
        found: list[tuple[int, int, int, str]] = []  # start, end, priority, type
        for det in self._detectors if detectors is None else detectors:
            regions = det.regions(text, lower)
            if not regions:
                continue
            if det.finder is not None:
                found.extend((s, e, det.priority, t) for s, e, t in det.finder(text, regions))
                continue
            for pattern in det.patterns:
                for lo, hi in regions:
                    for m in pattern.finditer(text, lo, hi):
                        for start, end in _spans(det, m, text):
                            secret = text[start:end]
                            if len(set(secret)) < 5 or PLACEHOLDER_RE.fullmatch(secret):
                                continue  # too short, or a doc placeholder (ACxxxxxxxx...)
                            if det.check is None or det.check(secret):
                                found.append((start, end, det.priority, det.type))
        if not found:
            return []
        allowed = self._allow.ranges(text) if (self._allow.literals or self._allow.patterns) else []
        chosen: list[tuple[int, int, str]] = []
        for start, end, _, type_ in sorted(found, key=lambda f: (-f[2], f[0] - f[1], f[0])):
            if any(a <= start and end <= b for a, b in allowed):
                continue
            if any(start < e and s < end for s, e, _ in chosen):
                continue  # a more specific (or longer) finding already covers it
            chosen.append((start, end, type_))
        return sorted(chosen)

    def text(self, text: str, detectors: Sequence[Detector] | None = None) -> str:
        """`text` with every finding replaced by `[REDACTED:type]`."""
        spans = self.findings(text, detectors)
        if not spans:
            return text
        parts, last = [], 0
        for start, end, type_ in spans:
            parts += [text[last:start], PLACEHOLDER.format(type_)]
            self.counts[type_] += 1
            last = end
        parts.append(text[last:])
        return "".join(parts)

    # -- values --------------------------------------------------------------------------------

    def value(self, value: Any, detectors: Sequence[Detector] | None = None) -> Any:
        """A scrubbed copy of `value`, or `value` itself (the same object) when nothing changed.

        `detectors`: the only ones that can match (what a JSON text as a whole gates in)."""
        if isinstance(value, str):
            return self._string(value, detectors)
        if isinstance(value, dict):
            return self._dict(value, detectors)
        if isinstance(value, list | tuple):
            new = [self.value(v, detectors) for v in value]
            if all(n is v for n, v in zip(new, value, strict=True)):
                return value
            return type(value)(new) if isinstance(value, tuple) else new
        if getattr(getattr(value, "dtype", None), "kind", None) == "O" and value.ndim == 1:
            # object arrays: how pyarrow hands back list columns
            new = [self.value(v, detectors) for v in value]
            if all(n is v for n, v in zip(new, value, strict=True)):
                return value
            out = value.copy()
            out[:] = new
            return out
        return value

    def _dict(self, value: dict[Any, Any], detectors: Sequence[Detector] | None) -> dict[Any, Any]:
        changed = False
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = self._string(k, detectors) if isinstance(k, str) else k
            type_ = secret_name_type(k, strict=True) if isinstance(k, str) else None
            if type_ and isinstance(v, str) and _plausible_value(v) and not self._allowed(v):
                new: Any = self._string(v, detectors)
                if new is v:  # no detector took it: the key says it is a secret anyway
                    new = PLACEHOLDER.format(type_)
                    self.counts[type_] += 1
            else:
                new = self.value(v, detectors)
            changed = changed or new is not v or key is not k
            out[key] = new
        return out if changed else value

    def _allowed(self, text: str) -> bool:
        return any(a <= 0 and len(text) <= b for a, b in self._allow.ranges(text))

    def _string(self, text: str, detectors: Sequence[Detector] | None = None) -> str:
        if len(text) < MIN_SCAN_LEN:
            return text
        if text.lstrip()[:1] in ("{", "["):
            # JSON (a trace, tool-call arguments): walk the parsed strings, each gated on its
            # own. Gating the whole text first costs a pass per detector over all of it, more
            # than parsing (json.loads runs at 100+ MB/s) and quick-rejecting short strings.
            if len(text) < QUICK_REJECT_LEN and not self.findings_possible(text):
                return text
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict | list):
                new = self.value(parsed, detectors)
                if new is parsed:
                    return text
                compact = '":' in text and '": ' not in text
                seps = (",", ":") if compact else (", ", ": ")
                return json.dumps(new, ensure_ascii=False, separators=seps)
        return self.text(text, detectors)

    @staticmethod
    def findings_possible(text: str) -> bool:
        """False when no detector's gate, nor a secret-naming JSON key, occurs in `text`."""
        quick = _quick_reject()
        lower = text.lower()
        return quick is None or bool(quick.search(lower))

    # -- datasets ------------------------------------------------------------------------------

    def frame(self, dataset: pd.DataFrame) -> tuple[pd.DataFrame, int]:
        """The dataset with every string cell (nested ones and JSON text too) scrubbed, and how
        many rows changed. Numeric/bool/datetime columns are left alone."""
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
            new = [self.value(v) for v in values]
            changed = np.fromiter((n is not v for n, v in zip(new, values, strict=True)), bool)
            if not changed.any():
                continue
            touched |= changed
            if out is dataset:
                out = dataset.copy()
            dtype = object if isinstance(series.dtype, pd.CategoricalDtype) else series.dtype
            out[column] = pd.Series(new, index=series.index, dtype=dtype)
        return out, int(touched.sum())


def _spans(det: Detector, m: re.Match[str], text: str) -> Iterable[tuple[int, int]]:
    if det.group and m.re.groups:
        spans = [m.span(i) for i in range(1, m.re.groups + 1) if m.start(i) < m.end(i)]
        yield from _merge(spans)
        return
    start, end = m.span()
    while start < end and text[start] in " \t\r\n\"'=:":  # regexes that match their delimiters
        start += 1
    while end > start and text[end - 1] in " \t\r\n\"'":
        end -= 1
    if det.span is not None:
        start, end = det.span(text, start, end)
    elif det.extend:
        end = TOKEN_TAIL.match(text, end).end()  # type: ignore[union-attr]
    yield start, end


def _merge(spans: list[tuple[int, int]], gap: int = 0) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(e, out[-1][1]))
        else:
            out.append((s, e))
    return out


QUICK_REJECT_LEN = 2048  # below this, one alternation beats thirty calls


@lru_cache(maxsize=1)
def _quick_reject() -> re.Pattern[str] | None:
    """Every detector's gates, lowercased, as one alternation run on the lowercased text: a
    short string it does not match cannot hold a finding (most strings of a trace: ids, names,
    short messages), so it costs one regex call instead of one per detector. Lowercasing a gate
    only widens it (no gate uses a case-carrying escape such as `\\S`). None if a detector
    has no gate."""
    detectors = _detectors()
    if any(not d.gates for d in detectors):
        return None
    return re.compile("|".join(sorted({g.lower() for d in detectors for g in d.gates})))


@lru_cache(maxsize=1)
def _detectors() -> tuple[Detector, ...]:
    """Most specific first; built once (compiling the gates costs a few milliseconds)."""
    return (*_extra_detectors(), *_detect_secrets_detectors())


def detector_types() -> list[str]:
    """Every placeholder type this build can emit (for docs and tests)."""
    return sorted({d.type for d in _detectors()} | {"password"})
