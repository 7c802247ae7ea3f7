"""Secret-looking names and plausible secret values: the heuristics behind every rule that finds
a secret by what it is called (`password: ...`, `API_KEY=...`, `{"client_secret": ...}`).

detect-secrets' KeywordDetector answers part of this (quoted values after a keyword), but it
needs quotes or a known file type, takes `password: see the docs` in prose for a secret, and
returns values, not positions. Transcripts mix INI, YAML, TOML, .env, JSON, shell, HTTP headers
and code in one string, so the naming rule is written here once and used by every rule and the
JSON walk. Its value filters reuse detect-secrets' `is_sequential_string`.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from functools import lru_cache

PLACEHOLDER = "[REDACTED:{}]"
PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")

# Every secret-looking name contains one of these (case-insensitive): the gates of every rule
# that finds secrets by name. `classify` never accepts a name without one (tested).
NAME_GATES = ("pass", "pwd", "pw", "pswd", "paswd", "secret", "token", "key", "auth", "cred", "sig")

_NAME = re.compile(r"[A-Za-z0-9_.\-$@:]+")
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
_NOT_PASS = {"BYPASS", "COMPASS", "SURPASS", "ENCOMPASS", "TRESPASS", "OVERPASS", "UNDERPASS"}
_KEY_WORDS = {  # one word that names a secret key (apikey, secretAccessKey -> ACCESSKEY, ...)
    "APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY", "MASTERKEY", "ACCOUNTKEY", "AUTHKEY",
    "LICENSEKEY", "SIGNINGKEY", "ENCRYPTIONKEY", "SUBSCRIPTIONKEY", "CLIENTKEY", "APPKEY",
    "SERVICEKEY", "ADMINKEY", "APIKEYS",
}  # fmt: skip
_CRED_WORDS = {"CREDENTIAL", "CREDENTIALS", "CREDS", "CRED"}
_KEY_SUFFIXES = ("APIKEY", "ACCESSKEY", "SECRETKEY", "PRIVATEKEY")  # IBMCLOUDIAMAPIKEY
# Words beside KEY that make it a credential (API_KEY, ACCESS_KEY); with other words a `key` is
# as likely a cache/dict/primary key, so its value must look random (see `looks_random`).
_KEY_QUALIFIERS = {
    "API", "ACCESS", "SECRET", "PRIVATE", "MASTER", "ACCOUNT", "AUTH", "CLIENT", "APP",
    "APPLICATION", "SERVICE", "SIGNING", "ENCRYPTION", "LICENSE", "SUBSCRIPTION", "ADMIN",
    "WEBHOOK", "DEPLOY", "SESSION", "SHARED", "HMAC", "JWT", "ROOT", "STORAGE", "OPENAI",
    "ANTHROPIC", "STRIPE", "GEMINI", "GOOGLE", "AWS", "AZURE", "GCP", "MAPS", "SSH", "GPG",
}  # fmt: skip
# Words beside TOKEN that make it a pagination cursor, an LLM token or a count, not a credential.
_TOKEN_NOT = {
    "NEXT", "PAGE", "CONTINUATION", "CSRF", "XSRF", "CANCEL", "CANCELLATION", "SYNC", "RESUME",
    "START", "END", "EOS", "BOS", "PAD", "UNK", "SEP", "CLS", "MASK", "SPECIAL", "STOP", "INPUT",
    "OUTPUT", "TOTAL", "PROMPT", "COMPLETION", "CACHE", "CACHED", "REASONING", "THINKING",
    "LAST", "FIRST", "CURRENT", "PREV", "PREVIOUS", "DELIMITER", "SPLIT", "BUDGET",
}  # fmt: skip
# A last word that says the value is *about* a secret, not the secret (SSH_KEY_PATH, ...).
_NOT_SECRET_LAST = {
    "PATH", "FILE", "FILES", "DIR", "NAME", "NAMES", "ID", "IDS", "TYPE", "LEN", "LENGTH", "SIZE",
    "URL", "URI", "HOST", "PORT", "USER", "USERNAME", "ENV", "VAR", "FIELD", "HEADER", "ARN",
    "PREFIX", "SUFFIX", "ALGORITHM", "ALG", "TTL", "EXPIRY", "EXPIRES", "EXPIRATION", "AT",
    "COUNT", "LIMIT", "MODE", "REGEX", "PATTERN", "HASH", "HASHED", "FORMAT", "SCHEME",
    "ENDPOINT", "KIND", "STDIN", "PROMPT", "REQUIRED", "POLICY", "HINT", "STRENGTH", "CONFIRM",
    "CONFIRMATION", "RESET", "AGE", "ROTATION", "MANAGER", "HELPER", "LOCATION", "KEYS",
    "ENABLED", "DISABLED", "VERSION", "LABEL", "DESCRIPTION", "TEXT", "MESSAGE", "ERROR",
    "INPUT", "FIELDS", "COLUMN", "PARAM", "PARAMS", "STATUS", "VALID", "VALIDATOR", "SOURCE",
    "STORE", "PROVIDER", "METHOD", "TEMPLATE", "CMD", "COMMAND", "SCRIPT", "CLASS", "ENCODING",
    "SOCK", "SOCKET", "DOMAIN", "REGION", "ROLE", "GROUP", "ACCOUNT", "EMAIL", "LOGIN",
    "VALUES", "PROFILE", "EXCHANGE", "AUDIT", "CHANGED", "MGR", "BASE64",
}  # fmt: skip
_SHELL_VARS = {"PWD", "OLDPWD", "$PWD", "$OLDPWD"}  # the working directory, in every env dump
_NOT_SECRET_FIRST = {
    "PUBLIC", "PUBLISHABLE", "PUB", "MAX", "MIN", "NUM", "IS", "HAS", "USE",
    # says the value is not a real one: fakeToken, dummy_password, nonMatchingToken, INVALID_KEY
    "FAKE", "DUMMY", "MOCK", "BOGUS", "NON", "INVALID", "PLACEHOLDER", "EXAMPLE", "SAMPLE",
}  # fmt: skip
# Words beside KEY that make it a database, cache, map or keyboard key, never a credential
# (primaryKey, foreign_key, bucket_key, sort_key).
_KEY_NOT = {
    "PRIMARY", "FOREIGN", "SORT", "PARTITION", "RANGE", "CACHE", "COMPOSITE", "UNIQUE", "INDEX",
    "MAP", "DICT", "LOOKUP", "SHORTCUT", "HOT", "ROUTING", "SHARD", "IDEMPOTENCY", "DEDUP",
    "DEDUPE", "BUCKET", "ROW", "OBJECT", "GROUP", "LOCALE", "I18N", "TRANSLATION", "NATURAL",
    "SURROGATE", "CANDIDATE", "REF", "REFERENCE", "CLUSTERING", "HASHING", "DISTRIBUTION",
    "JOIN", "ORDER", "GROUPING", "DOWN", "UP", "PRESS", "PRESSED", "EVENT", "CODE", "BINDING",
    "BINDINGS", "STROKE", "STROKES", "BOARD", "FRAME", "FRAMES", "PATH", "NAME", "CONFIG",
}  # fmt: skip


@dataclass(frozen=True)
class NameClass:
    """What a name says about its value: the placeholder type, whether the value must also
    look random to count (`strict`: bare `key`, `token`, `auth`), and whether it is an HTTP
    `Authorization` header (`scheme credentials`)."""

    type: str
    strict: bool = False
    header: bool = False


@lru_cache(maxsize=8192)
def classify(name: str) -> NameClass | None:
    """The NameClass of `name` (API_KEY, db-password, clientSecret, PGPASSWORD), or None."""
    if len(name) > 80 or not _NAME.fullmatch(name) or name.upper() in _SHELL_VARS:
        return None
    words = [w.upper() for w in _SPLIT.split(name.strip("-_.$@:")) if w]
    if not words or words[-1] in _NOT_SECRET_LAST or words[0] in _NOT_SECRET_FIRST:
        return None
    if "PUBLIC" in words or "PUBLISHABLE" in words:  # LANGFUSE_PUBLIC_KEY, STRIPE_PUBLISHABLE_KEY
        return None
    if any(
        _is_password_word(w, (words[i + 1 :] or [None])[0], words[i - 1] if i else None)
        for i, w in enumerate(words)
    ):
        return NameClass("password")
    if words[-1] in ("AUTHORIZATION", "AUTHENTICATION") or words == ["PROXY", "AUTHORIZATION"]:
        return NameClass("secret", header=True)
    others = set(words)
    if any("SECRET" in w and w != "SECRETARY" for w in words):
        return NameClass("secret")
    if any(w in _KEY_WORDS or w in _CRED_WORDS or w.endswith(_KEY_SUFFIXES) for w in words):
        return NameClass("secret")
    tokens = [w for w in words if "TOKEN" in w and not w.startswith("TOKENI") and w != "TOKENS"]
    if tokens:
        compound = any(
            w.rstrip("0123456789") != "TOKEN" for w in tokens
        )  # token2: a TOKEN  # ACCESSTOKEN, authToken -> AUTH TOKEN
        if others & _TOKEN_NOT:
            return None  # next_page_token, csrf-token, max_tokens: not a credential
        if compound or len(words) > 1:
            return NameClass("secret")
        return NameClass("secret", strict=True)
    if "KEY" in others:
        if others & _KEY_NOT:
            return None  # primaryKey, foreign_key, key_down_event
        strict = not others & _KEY_QUALIFIERS
        if strict and words[-1] != "KEY":
            return None  # key_frame_rate, KEY_ALIAS_PREFIX: about a key, or not a credential
        return NameClass("secret", strict=strict)
    if others & {"AUTH", "SIG", "APIAUTH"}:  # not SIGNATURE: Claude's thinking blocks have one
        return NameClass("secret", strict=True)
    return None


# Whose password a bare PASS names when more words follow (`db_pass_secure`, `ADMIN_PASS_2`).
_PASS_OWNERS = {
    "DB", "DATABASE", "USER", "ADMIN", "ROOT", "SMTP", "MAIL", "EMAIL", "FTP", "SFTP", "SSH",
    "LDAP", "REDIS", "MYSQL", "PG", "POSTGRES", "MONGO", "RABBITMQ", "AMQP", "PROXY", "WIFI",
    "VNC", "RDP", "KEYSTORE", "STORE", "TRUSTSTORE", "SA", "SYS", "SYSTEM", "APP", "API",
}  # fmt: skip


def _is_password_word(w: str, following: str | None = None, previous: str | None = None) -> bool:
    """`following`/`previous`: the words beside it; a bare PASS is a password only last, before
    WORD, PHRASE, CODE or KEY, or after whose it is (`DB_PASS_SECURE`); `PASS_THROUGH`,
    `PASS_RATE`, `TEST_PASS_COUNT` are not."""
    if "PASSWORD" in w or "PASSWD" in w or "PASSPHRASE" in w or "PASSCODE" in w:
        return True
    owned = w == "PASS" and previous in _PASS_OWNERS and following not in _NOT_SECRET_LAST
    if w in ("PASS", "PW") and following not in (None, "WORD", "PHRASE", "CODE", "KEY"):
        return owned
    if w in ("PASS", "PWD", "PW", "PSWD", "PASWD"):
        return True
    return w.endswith("PWD") or (w.endswith("PASS") and w not in _NOT_PASS)


# ---- values ---------------------------------------------------------------------------------

# A template or a reference, not a value: ${X}, {{ x }}, {x}, %(x)s, %s, <x>, $X, %X%, $(cmd).
_TEMPLATE = re.compile(
    r"\$\{[A-Za-z_][\w.:\-]*(?:[:?][^{}]*)?\}|\$\{\{[^{}]*\}\}|\{\{[^{}]*\}\}|\{%|\$\([^()]*\)?"
    r"|%\([A-Za-z_]\w*\)[sdr]|%[sdrv]\b|\{[A-Za-z_][\w.\[\]'\"]+\}|"
    r"<[A-Za-z_][\w\- ]*>|^<[^<>]*>$|^\$[A-Za-z_]|^%[A-Za-z_]\w*%$|^@[A-Za-z_]\w*@$"
)
# A placeholder, flag, number or word that stands in for a secret in docs and configs.
_NOT_A_VALUE = re.compile(
    r"""(?:true|false|none|null|nil|undefined|yes|no|on|off|\d{1,5}|[*xX.\-_#]+|…|changeme
    |change[-_ ]?me|change[-_ ]?this|replace[-_ ]?me|your[-_a-z0-9 ]*|my[-_ ]?(?:api[-_ ]?key
    |token|secret|password)|redacted|example|placeholder|dummy|sample|secret|password|passwd
    |token|api[-_ ]?key|test|testing|todo|tbd|fixme|empty|hidden|masked|omitted|removed
    |required|optional|string|str|int|bool|any|object|default|unknown|value|env|environment
    |insert[-_ a-z]*|enter[-_ a-z]*|put[-_ a-z]*here|<[^>]*>|\[[^\]]*\]|\.\.\.+|(?:x{3,}|\*{3,})\S*
    |[A-Za-z0-9]+[-_](?:\*{3,}|x{3,}|\.{3,}|…)\S*|os\.environ.*|process\.env.*
    |getenv.*|env\(.*|secrets?\..*|vault:.*|arn:aws:.*|ENC\[.*
    |(?:token|password|passwd|pass|secret|key|api[-_]?key|test|demo|example|admin|user)[-_]?\d{1,6})""",
    re.I | re.X,
)
_PATH = re.compile(  # a file path (PWD=/home/me/proj2, SSH_AUTH_SOCK=/tmp/ssh-x/agent.1)
    r"(?:~|\.\.?|/(?:home|Users|tmp|var|etc|usr|opt|run|root|mnt|srv|app|data|workspace|private)"
    r"|[A-Za-z]:)[/\\]"
)
_NAME_LIKE = re.compile(r"[A-Za-z_\-.:/ |`,()\[\]!?@]+")  # words and names: no digit, no symbol
_CODE = re.compile(r"[()\[\]{};]|\s==\s|\s(?:or|and|if|else|\+|-)\s|^(?:self|this|cls|ctx)\.")
_IDENTIFIER = re.compile(  # credential_b64, boto3_info.credentials, ed25519.Ed25519PrivateKey
    r"[a-z_][a-z0-9]*(?:_[a-z0-9]+)+(?:\.[A-Za-z_]\w*)*|[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)+"
)
_STRUCTURE = re.compile(r"\{.*\}|\[.*\]", re.S)  # JSON or a list in a string: not a secret
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/=_\-.~%]*")
_RANDOM_CHARS = re.compile(r"[A-Za-z0-9+/=_\-.~%]+")  # % for URL-encoded base64
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_HEX = re.compile(r"[0-9a-fA-F]+")


_WORDY = re.compile(
    r"[a-z][a-z0-9]{0,23}(?:[_\-.:/=][a-z0-9]{1,24})+|[A-Z][A-Z0-9]{0,23}(?:[_\-.:/=][A-Z0-9]{1,24})+"
)  # words joined by _ - . : / = (snake_case names, dotted paths, keys like a/b=2019/c)
_SEPARATORS = re.compile(r"[_\-.:/=]+")
# A word of a name or path: letters then at most a version or year (`cache`, `v2`, `boto3`,
# `ed25519`, `2024`). A random segment (`7dimrl6cm7`, `u7uc59ndv539`) mixes them freely.
_WORD_SEGMENT = re.compile(r"[A-Za-z]+[0-9]{0,6}|[0-9]+|[0-9]{1,4}[A-Za-z]{1,3}")


def wordy(v: str) -> bool:
    """Words joined by `_ - . : / =` in one case (`user_profile_cache_v2`, `users:v2:42`,
    `nyc-taxi/year=2019`), each a word: not a single-case token with separators
    (`b_7=u7uc59ndv539_5oj`, `A3-1BZ3FN-WVWYWGBII2W`), whose segments are random."""
    return _WORDY.fullmatch(v) is not None and _words(v)


def wordy_parts(v: str) -> bool:
    """Every part of `v` between separators is a word (`urllib2`, `os.path`)."""
    return _words(v)


def _words(v: str) -> bool:
    return all(_WORD_SEGMENT.fullmatch(seg) for seg in _SEPARATORS.split(v) if seg)


_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def random_letters(v: str) -> bool:
    """Letters only, but not words: case changes every letter or two (`yqDVtkqPECriaLRi`,
    `sueqICtbUsqOzX`), or runs averaging four letters or fewer with two that short
    (`nwvSfZUKECWhkTbYoi`), where CamelCase names have words (`SalesResults`,
    `HTTPServerError`). Random mixed-case letters pass 92% of the time (78% with the first test
    alone; measured over 400 values of 12-24 letters); over the 23,698 text files of this
    repository and its dependencies it changes one file more (a docs example password)."""
    if len(v) < 12 or not v.isascii() or not v.isalpha():
        return False
    words = _CAMEL_WORD.findall(v)
    short = sum(len(w) <= 2 for w in words)
    return (short >= 3 and short * 4 >= len(words)) or (short >= 2 and len(words) * 4 >= len(v))


_CLOSE_OF = {")": "(", "]": "[", "}": "{"}


def _looks_like_code(v: str) -> bool:
    """A bare value that reads as code: a call, an index, an operator (`get(a)`, `x[0]`,
    `a or b`). Brackets that close the wrong opener (`m{{h}o)p`) are a password, not code."""
    if _CODE.search(v) is None:
        return False
    stack: list[str] = []
    for c in v:
        if c in "([{":
            stack.append(c)
        elif c in _CLOSE_OF:
            if stack and stack[-1] != _CLOSE_OF[c]:
                return False
            if stack:
                stack.pop()
    return True


def placeholder(v: str) -> bool:
    """A stand-in for a secret in docs and configs (`changeme`, `REDACTED`, `<token>`, ...)."""
    return _NOT_A_VALUE.fullmatch(v.strip()) is not None or _TEMPLATE.search(v) is not None


def looks_random(v: str) -> bool:
    """A token-shaped value: 16+ token characters with digits, and both cases (base62/base64)
    or 32+ characters (long lowercase or hex secrets); not a UUID, not a bare 32/40/64-digit
    hex digest (commit SHAs, content hashes and ids sit under `key`/`token` names too), not
    words joined by `_`, `-`, `.` (`user_profile_cache_v2`)."""
    if len(v) < 16 or _RANDOM_CHARS.fullmatch(v) is None or not any(c.isdigit() for c in v):
        return False
    if _UUID.fullmatch(v) or wordy(v):
        return False
    if _HEX.fullmatch(v) and len(v) in (32, 40, 64, 128):
        return False
    mixed = any(c.isupper() for c in v) and any(c.islower() for c in v)
    return mixed or len(v) >= 32


_PHRASE_WORD = re.compile(r"[A-Za-z0-9'-]+")


def _phrase_secret(v: str, kind: NameClass | None, bare: bool) -> bool:
    """A quoted passphrase (`password = "correct horse battery staple"`): 3 to 6 plain words,
    quoted, under a name that is not a bare `key`/`token`, with no sentence punctuation, no
    instruction (`enter ...`, `your ...`) and no word naming the secret."""
    words = v.split()
    if bare or kind is None or kind.strict or not 3 <= len(words) <= 6:
        return False
    if not all(_PHRASE_WORD.fullmatch(w) for w in words):
        return False
    lowered = {w.lower() for w in words}
    return not lowered & _PHRASE_STOP


_PHRASE_STOP = {
    "your", "enter", "the", "is", "are", "be", "must", "should", "not", "required", "see",
    "here", "use", "set", "this", "for", "of", "to", "from", "password", "token", "key",
    "secret", "api", "please", "invalid", "missing", "empty", "field", "goes",
}  # fmt: skip


def plausible(
    value: str, kind: NameClass | None = None, *, bare: bool = False, name: str = ""
) -> bool:
    """Whether `value`, found next to a secret-looking name, is a secret and not a reference,
    template, placeholder, flag, number, name, sentence, structure, the name itself, or (for
    unquoted values, `bare`) code or an identifier."""
    # ~70 ms (measured): detect-secrets on first use; this default plugin loads with every command
    from detect_secrets.filters.heuristic import is_sequential_string

    v = value.strip()
    bare_name = name.strip("\"'`-_.$@:")
    if len(bare_name) >= 4 and bare_name.lower() in v.lower():
        return False  # TOKEN: "token", "/v1/user-credentials", "oauth2_token_exchange"
    if len(v) >= 6 and v.lower() in bare_name.lower():
        return False  # 'CopySourceSSECustomerKeyMD5': 'SSECustomerKeyMD5'
    if v.startswith("<") and not v.endswith(">") and (" " in v or ":" in v):
        return False  # `<xsd:element name=`: markup, cut at a quote
    phrase = _phrase_secret(v, kind, bare)
    if len(v.split()) >= 3 and not phrase:
        return False  # a sentence
    if _STRUCTURE.fullmatch(v):
        return False  # JSON or a list
    password = kind is not None and kind.type == "password"
    if len(v) < (4 if password else 6) or PLACEHOLDER_RE.search(v):
        return False
    if _TEMPLATE.search(v) or _NOT_A_VALUE.fullmatch(v) or is_sequential_string(v):
        return False
    if phrase:
        return True
    if not any(c.isalnum() for c in v) or len(set(v)) < 3 or _PATH.match(v):
        return False
    if v.isdigit():  # a PIN or numeric password; a long numeric key (Discord, Asana ids)
        return (password and len(v) >= 6) or (kind is not None and not kind.strict and len(v) >= 12)
    if _NAME_LIKE.fullmatch(v) and not random_letters(v):
        return False
    if bare and (_looks_like_code(v) or (_IDENTIFIER.fullmatch(v) and _words(v))):
        return False
    if wordy(v):
        return False
    if kind is None or not kind.strict:
        return True
    token = _RANDOM_RUN.match(v).group()  # type: ignore[union-attr]  # what a token is made of
    if looks_random(token) or basic_credentials(v):
        return True
    return qualified_hex_key(token, bare_name)


def qualified_hex_key(value: str, name: str) -> bool:
    """A hex key under a qualified name (`softlayer_key`, `sl_api_key`): 32+ hex digits with
    letters and digits. A bare `key`/`token` holding a digest stays (commit SHAs and content
    hashes sit under those names too)."""
    qualified = len([w for w in _SPLIT.split(name.strip("\"'`-_.$@:")) if w]) >= 2
    return qualified and len(value) >= 32 and _HEX.fullmatch(value) is not None and _mixed(value)


def _mixed(v: str) -> bool:
    return any(c.isdigit() for c in v) and any(c.isalpha() for c in v)


def basic_credentials(v: str, empty_password: bool = False) -> bool:
    """`v` is base64 of `user:password` (HTTP Basic auth, docker's config.json `auth`);
    with `empty_password`, also of `user:` (an API key sent as the user name)."""
    if len(v) < 8 or not re.fullmatch(r"[A-Za-z0-9+/]+={0,2}", v):
        return False
    try:
        decoded = base64.b64decode(v + "=" * (-len(v) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, sep, password = decoded.partition(":")
    if empty_password and sep and not password:
        return len(user) >= 4 and decoded.isprintable() and " " not in user
    return bool(sep and password) and decoded.isprintable() and " " not in user


# Well-known stand-ins in URL credentials (`postgres://user:password@localhost`).
URL_PLACEHOLDERS = {
    "password", "pass", "passwd", "pwd", "secret", "changeme", "pw", "token", "user",
    "username", "guest", "example", "test", "xxx", "foo", "bar", "dbpass", "mypassword",
}  # fmt: skip
