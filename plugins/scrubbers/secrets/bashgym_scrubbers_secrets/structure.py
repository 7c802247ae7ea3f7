"""Secrets found by what is around them, not by their own shape or a name before them: URL
credentials, a tool's password argument (`mysql -pX`, `htpasswd -b FILE USER X`, `echo X |
sudo -S`), curl's `-u`, session cookies, Terraform variable defaults and Kubernetes Secret data.

Each finder takes (text, Context, gate ids) and yields (start, end, placeholder type); the rule
table (`rules.py`) pairs each with the gates that guard it.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from bashgym_scrubbers_secrets.assign import Finding
from bashgym_scrubbers_secrets.names import (
    URL_PLACEHOLDERS,
    NameClass,
    classify,
    looks_random,
    placeholder,
    plausible,
)
from bashgym_scrubbers_secrets.prefilter import Gate

if TYPE_CHECKING:
    from bashgym_scrubbers_secrets.detect import Context

URL = re.compile(
    r"[A-Za-z][A-Za-z0-9+.\-]{1,30}://(?P<user>[^\s:/?#@'\"`<>\[\]{}\\]*):"
    r"(?P<s>[^\s'\"`<>]+)@(?=[A-Za-z0-9\[_])[^\s'\"`<>@]*",
    re.ASCII,
)
_PORT_PATH = re.compile(r"[0-9]{1,5}(?:/.*)?")


def url_password_check(secret: str) -> bool:
    """Not a port and path (`https://host:8080/@scope/pkg`), a template (`${PASSWORD}`), a
    placeholder (`user:password@`) or a reference."""
    if secret.endswith("/") or _PORT_PATH.fullmatch(secret):
        return False
    if secret.lower() in URL_PLACEHOLDERS:
        return False
    if placeholder(secret):
        return False
    # letters only: a password only when long (`github://org:repo@sha` is an fsspec path)
    return plausible(secret, NameClass("password")) or (secret.isalpha() and len(secret) >= 8)


# A token as a URL's user with no password: a Sentry DSN (`https://<32 hex>@o1.ingest.sentry.io/2`),
# a GitHub token in a clone URL (`https://<40 hex>@github.com/org/repo.git`). Here a bare hex
# run is a key, not a commit SHA; a person's name or an email's local part is not random. Not
# over SSH, where the user names an account or a job (`ssh://687fb7010294...@ssh.hf.jobs`) and a
# key authenticates. Read from each `://` (transcript lines are long: a regex that starts with
# the scheme would be tried at every character of the line).
_TOKEN_USER_AT = re.compile(r"(?P<s>[A-Za-z0-9_\-.~%]{20,})@(?=[A-Za-z0-9\[])", re.ASCII)
_SCHEME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_SSH_SCHEMES = frozenset({"ssh", "sftp", "scp", "git+ssh", "ssh+git"})
_HEX_TOKEN = re.compile(r"[0-9a-f]{20,}|[0-9A-F]{20,}")


def url_token_users(text: str, ctx: Context, gate_ids: tuple[int, ...]) -> Iterable[Finding]:
    last = -1
    for p in ctx.positions(gate_ids):
        i = text.find("://", max(0, p - 2), p + 3)  # a gate position lies inside its match
        if i == -1 or i == last:
            continue
        last = i
        m = _TOKEN_USER_AT.match(text, i + 3)
        if m is None:
            continue
        j = i
        while j > 0 and i - j < 32 and text[j - 1] in _SCHEME_CHARS:
            j -= 1
        scheme = text[j:i].lower()
        if not scheme[:1].isalpha() or scheme in _SSH_SCHEMES:
            continue
        secret = m.group("s")
        if not (any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)):
            continue
        if placeholder(secret):
            continue
        if _HEX_TOKEN.fullmatch(secret) is not None or looks_random(secret):
            yield m.start("s"), m.end("s"), "api-key"


_ECHO = r"""(?:echo|printf)[ \t]+(?:-[neE]+[ \t]+|(["'])%s(?:\\n)?\1[ \t]+)?"""
_Q = r"""(?:'(?P<s1>[^'\n]+)'|"(?P<s2>[^"\n]+)"|(?P<s3>[^\s'"-][^\s'"]*))"""
_Q_IN_PARENS = (
    r"""(?:'(?P<s1>[^'\n]+)'|"(?P<s2>[^"\n]+)"|(?P<s3>[^\s'"()-][^\s'"()]*))"""  # $(... X)
)
CLI: list[tuple[tuple[str | Gate, ...], str]] = [  # (gates: patterns or Gates, regex)
    # mysql -pS3cret (attached: `-p S3cret` would be a prompt and a database name)
    (("mysql", "mariadb"), r"(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n|;&]*?[ \t]-p" + _Q),
    (("sshpass",), r"sshpass[ \t]+-p[ \t]*" + _Q),
    (("redis-cli",), r"redis-cli\b[^\n|;&]*?[ \t](?:-a|--pass)[ \t]+" + _Q),
    # docker/podman/helm/az/oras login ... -p SECRET
    (("login",), r"login\b[^\n|;&]*?[ \t]-p[ \t]+" + _Q),
    # openssl -passin pass:SECRET / -passout / -pass
    (("pass:",), r"-pass(?:in|out)?[ \t]+['\"]?pass:(?P<s3>[^\s'\"]+)"),
    # a password piped in: `echo SECRET | sudo -S ...`, `echo SECRET | ... --password-stdin`
    ((r"\|[ \t]*sudo[ \t]",), _ECHO + _Q + r"[ \t]*\|[ \t]*sudo[ \t][^\n|;&]*?-S\b"),
    (("password-stdin",), _ECHO + _Q + r"[ \t]*\|[^\n|;&]*?--password-stdin"),
    # ngrok config add-authtoken TOKEN, ngrok authtoken TOKEN
    (("authtoken",), r"\bauthtoken[ \t]+" + _Q),
    # passwords as positional arguments or single-letter flags of admin tools
    (
        (r"gh[ \t]+secret[ \t]+set",),
        r"\bgh[ \t]+secret[ \t]+set\b[^\n|;&]*?[ \t](?:--body|-b)(?:=|[ \t]+)" + _Q,
    ),
    (
        ("htpasswd",),
        r"\bhtpasswd[ \t]+(?:-[A-Za-z]+[ \t]+)*?-[A-Za-z]*b[A-Za-z]*[ \t]+"
        r"(?:-[A-Za-z]+[ \t]+)*[^\s-]\S*[ \t]+[^\s-]\S*[ \t]+" + _Q,
    ),
    ((r"zip[ \t](?:[^\n]*[ \t])?-P[ \t]",), r"\bzip\b[^\n|;&]*?[ \t]-P[ \t]+" + _Q),
    ((r"7za?[ \t](?:[^\n]*[ \t])?-p[^\s]",), r"\b7za?\b[^\n|;&]*?[ \t]-p" + _Q),
    (
        (r"mongo[a-z]*[ \t](?:[^\n]*[ \t])?-p[ \t]",),
        r"\bmongo(?:sh|dump|restore|import|export|stat|top)?\b[^\n|;&]*?[ \t]-p[ \t]+" + _Q,
    ),
    (
        (r"(?:sqlcmd|bcp|osql)[ \t](?:[^\n]*[ \t])?-P",),
        r"\b(?:sqlcmd|bcp|osql)\b[^\n|;&]*?[ \t]-P[ \t]*" + _Q,
    ),
    ((r"ldap[a-z]+[ \t](?:[^\n]*[ \t])?-w[ \t]",), r"\bldap[a-z]+\b[^\n|;&]*?[ \t]-w[ \t]+" + _Q),
    (
        ("smbclient", "rpcclient", "smbmap"),
        r"\b(?:smbclient|rpcclient|smbmap)\b[^\n|;&]*?[ \t]-U[ \t]+['\"]?[^\s%'\"]+%"
        r"(?P<s3>[^\s'\"]+)",
    ),
    ((r"net[ \t]+user[ \t]",), r"\bnet[ \t]+user[ \t]+[^\s/]+[ \t]+" + _Q + r"(?=[ \t]+/)"),
    ((r"passwd[ \t]+--stdin",), _ECHO + _Q + r"[ \t]*\|[ \t]*(?:sudo[ \t]+)?passwd[ \t]+--stdin"),
    (
        ("chpasswd",),
        _ECHO + r"""(["']?)[^\s:'"]+:(?P<s3>[^\s'"]+)\2[ \t]*\|[ \t]*(?:sudo[ \t]+)?chpasswd""",
    ),
    (
        (r"openssl[ \t]+passwd",),
        r"\bopenssl[ \t]+passwd\b(?:[ \t]+-[A-Za-z0-9]+)*[ \t]+" + _Q_IN_PARENS,
    ),
    (("rabbitmqctl",), r"\brabbitmqctl[ \t]+(?:add_user|change_password)[ \t]+\S+[ \t]+" + _Q),
    (("mysqladmin",), r"\bmysqladmin\b[^\n|;&]*?[ \t]password[ \t]+" + _Q),
    (("requirepass", "masterauth"), r"\b(?:requirepass|masterauth)[ \t]+" + _Q),
    (
        (r"mc[ \t]+(?:alias[ \t]+set|config[ \t]+host)",),
        r"\bmc[ \t]+(?:alias[ \t]+set|config[ \t]+host[ \t]+add)[ \t]+\S+[ \t]+\S+[ \t]+\S+[ \t]+"
        + _Q,
    ),
    # SQL: CREATE/ALTER USER ... IDENTIFIED BY 'x' (MySQL), IDENTIFIED WITH plugin BY 'x'
    (
        (Gate(r"identified[ \t]+(?:with[ \t]+[A-Za-z0-9_]+[ \t]+)?by[ \t]", caseless=True),),
        r"(?i:identified)[ \t]+(?:(?i:with)[ \t]+\w+[ \t]+)?(?i:by)[ \t]+"
        r"(?:'(?P<s1>[^'\n]+)'|\"(?P<s2>[^\"\n]+)\")",
    ),
    # HTTP basic auth in code: requests' `auth=("user", "PASSWORD")`, `HTTPBasicAuth("u", "P")`
    (
        (r"auth[ \t]*=[ \t]*\(", r"BasicAuth\("),
        r"""(?:\bauth[ \t]*=[ \t]*\(|BasicAuth\()[ \t]*(["'])[^"'\n]*\1[ \t]*,[ \t]*"""
        r"""(?:'(?P<s1>[^'\n]+)'|"(?P<s2>[^"\n]+)")""",
    ),
]


# curl/wget -u USER:PASSWORD (quoted whole or in parts, `"user":"pass"`, or `KEY:` with no
# password: an API key as the user), over `\` line continuations.
_CURL = re.compile(
    r"""(?:curl|wget)\b(?:[^\n|;&\\]|\\\r?\n|\\)*?[ \t](?:-u|--user|--http-user)(?:=|[ \t]+)
    (?P<cred>'[^'\n]*'|"[^"\n]*"(?::"[^"\n]*")?|[^\s'"]+(?:'[^'\n]*'|"[^"\n]*")?)""",
    re.X | re.ASCII,
)


def curl_credentials(text: str, ctx: Context, gate_ids: tuple[int, ...]) -> Iterable[Finding]:
    """The password of `curl -u user:password` (the user too when it is the key)."""
    for lo, hi in ctx.windows(gate_ids, after=8):
        for m in _CURL.finditer(text, lo, hi):
            start, cred = m.start("cred"), m.group("cred")
            if cred[:1] in "<$" or "${" in cred or "$(" in cred or "{{" in cred:
                continue  # `-u <user:password>`, `-u $USER:$PASS`
            # positions of the user and password inside the credential, quotes aside
            sep = cred.find(":", 1 if cred[:1] in "\"'" else 0)
            if sep == -1:
                continue
            user_lo, user_hi = start + (1 if cred[:1] in "\"'" else 0), start + sep
            pw_lo, pw_hi = start + sep + 1, start + len(cred)
            while pw_lo < pw_hi and text[pw_lo] in "\"'":
                pw_lo += 1
            while pw_hi > pw_lo and text[pw_hi - 1] in "\"'":
                pw_hi -= 1
            while user_hi > user_lo and text[user_hi - 1] in "\"'":
                user_hi -= 1
            user, password = text[user_lo:user_hi], text[pw_lo:pw_hi]
            if password:
                if cli_check(password.strip("{}")):
                    yield pw_lo, pw_hi, "password"
            elif looks_random(user) or plausible(user, NameClass("secret")):
                yield user_lo, user_hi, "api-key"  # `curl -u sk_test_...:`


# Session cookies: `Cookie: sessionid=...; csrftoken=...`, `Set-Cookie: session=...; HttpOnly`,
# `curl --cookie "connect.sid=s%3A..."`. A session id is a login: whoever has it is the user.
_COOKIE_HEADER = re.compile(
    r"""(?:(?i:(?:set-)?cookie)\\?["']?[ \t]*:|--cookie(?:[ \t]+|=))[ \t]*\\?["']?""", re.ASCII
)
_COOKIE_PAIR = re.compile(r"[ \t]*(?P<n>[!#$%&*+\-.^_`|~0-9A-Za-z]{1,80})=(?P<s>[^;\s\"'\\,]*);?")
_SESSION_NAME = re.compile(r"sess|(?:^|[._-])sid$|auth|token|jwt|remember|login", re.I)


def session_cookies(text: str, ctx: Context, gate_ids: tuple[int, ...]) -> Iterable[Finding]:
    for lo, hi in ctx.windows(gate_ids):
        for header in _COOKIE_HEADER.finditer(text, lo, hi):
            pos = header.end()
            while (m := _COOKIE_PAIR.match(text, pos, hi)) is not None and m.end() > pos:
                pos = m.end()
                name, value = m.group("n"), m.group("s")
                if not (_SESSION_NAME.search(name) or classify(name) is not None):
                    continue
                if len(value) < 16 or placeholder(value) or not any(c.isdigit() for c in value):
                    continue
                if _HEX_TOKEN.fullmatch(value) or looks_random(value) or "%" in value:
                    yield m.start("s"), m.end("s"), "session-cookie"


# Terraform: `variable "db_password" { ... default = "VALUE" }`: the name is the block's label.
_TF_VARIABLE = re.compile(
    r"""variable[ \t]+"(?P<n>[^"\n]{1,80})"[ \t]*\{(?:[^{}]|\{[^{}]*\})*?"""
    r"""\bdefault[ \t]*=[ \t]*"(?P<s>[^"\n]+)(?=")""",
    re.ASCII,
)


def terraform_defaults(text: str, ctx: Context, gate_ids: tuple[int, ...]) -> Iterable[Finding]:
    for p in ctx.positions(gate_ids):
        # a gate position lies inside its match (`variable`, spaces, a quote)
        start = text.rfind("variable", max(0, p - 80), p + 8)
        m = _TF_VARIABLE.match(text, start) if start != -1 else None
        kind = classify(m.group("n")) if m is not None else None
        if m is not None and kind is not None and plausible(m.group("s"), kind):
            yield m.start("s"), m.end("s"), kind.type


# A Kubernetes Secret's `data:` / `stringData:` values are secrets whatever their keys are called
# (`.dockercfg`, `ca.pem`, `key`). Block scalars (`key: |` then indented lines) included.
_KIND_SECRET = re.compile(r"^[ \t]*kind:[ \t]*[\"']?secret[\"']?[ \t]*\r?$", re.M | re.I)
_DOC_SPLIT = re.compile(r"^---[ \t]*$", re.M)
_DATA_BLOCK = re.compile(r"^[ \t]*(?:data|stringData):[ \t]*\r?\n", re.M)
_YAML_COMMENT = re.compile(r"[ \t]*#[^\n]*\n")
_DATA_ENTRY = re.compile(
    r"^(?P<indent>[ \t]+)(?P<key>[^\s:#][^:\n]*):[ \t]*(?P<value>[^\n]*)\r?\n?", re.M
)


def kubernetes_secrets(text: str, ctx: Context, gate_ids: tuple[int, ...]) -> Iterable[Finding]:
    docs = [0, *(m.end() for m in _DOC_SPLIT.finditer(text)), len(text)]
    for p in ctx.positions(gate_ids):
        k = bisect.bisect_right(docs, p) - 1
        lo, hi = docs[max(k, 0)], docs[min(k + 1, len(docs) - 1)]
        if _KIND_SECRET.search(text, lo, hi) is None:
            continue  # kind: SecretStore, SecretProviderClass
        for block in _DATA_BLOCK.finditer(text, lo, hi):
            yield from _data_values(text, block.end(), hi)


def _data_values(text: str, pos: int, hi: int) -> Iterable[Finding]:
    indent = None
    while pos < hi:
        comment = _YAML_COMMENT.match(text, pos, hi)
        if comment is not None:
            pos = comment.end()
            continue
        m = _DATA_ENTRY.match(text, pos, hi)
        if m is None or (indent is not None and m.group("indent") != indent):
            return
        indent = m.group("indent")
        value, v_lo = m.group("value").strip(), m.start("value")
        pos = m.end()
        if value in ("|", ">", "|-", ">-", "|+", ">+", ""):  # block scalar: the indented lines
            body = pos
            while pos < hi:
                line_end = text.find("\n", pos, hi)
                line_end = hi if line_end == -1 else line_end
                line = text[pos:line_end]
                if line.strip() and not line.startswith((indent + " ", indent + "\t")):
                    break
                pos = line_end + 1
            span = text[body:pos].strip()
            if span and not placeholder(span):
                first = text.index(span[0], body)
                yield first, first + len(span), "secret"
            continue
        value = value.strip("\"'")
        if len(value) >= 12 and not placeholder(value):  # `YmFyCg==` ("bar"): a sample
            start = text.index(value, v_lo)
            yield start, start + len(value), "secret"


def cli_check(secret: str) -> bool:
    return plausible(secret, NameClass("password"))


# ~/.pgpass: `host:port:database:user:password` per line, `\:` and `\\` escaped, `*` a wildcard.
# Found by its shape, not by the file's name: a Write tool's content and `cat ~/.pgpass` output
# are strings of their own, apart from the path or command that names the file. A line is a
# whole line (a text line, or after a quote or a `\n` escape in text that is JSON but not parsed)
# of exactly five fields with a port (or `*`) second; the password must pass the password check.
PGPASS_GATE = Gate(r":(?:[0-9]{1,5}|\*):[A-Za-z0-9_.*$\-]+:[A-Za-z0-9_.*$\-]+:")
_PGPASS_FIELD = r"(?:[^:\s\\'\"]|\\[:\\])+"
_PGPASS_HEAD = (
    rf"(?P<host>\*|[A-Za-z0-9_.\-]+):(?:[0-9]{{1,5}}|\*):{_PGPASS_FIELD}:{_PGPASS_FIELD}:"
)
_PGPASS_LINES = (
    # a line of the file: the password runs to the line's end, quotes and all
    re.compile(
        rf"^[ \t]*{_PGPASS_HEAD}(?P<s>(?:[^:\s\\]|\\[:\\])+)(?=[ \t]*\r?$)", re.M | re.ASCII
    ),
    # a quoted line (`echo 'h:5432:d:u:pw' >> ~/.pgpass`) or one after a `\n` escape
    re.compile(rf"(?:(?<=['\"])|(?<=\\n)){_PGPASS_HEAD}(?P<s>{_PGPASS_FIELD})(?=['\"]|\\[nr])"),
)
# A grep hit (`app.py:12:a:b:c`) has a file where the host goes; a time (`12:30:45:07:..`) digits.
_SOURCE_FILE = re.compile(
    r"\.(?:py|pyi|js|jsx|ts|tsx|md|txt|rst|ya?ml|json|toml|ini|cfg|conf|rs|go|java|kt|c|h|cc"
    r"|cpp|hpp|rb|php|sh|sql|html|css|log|csv|lock|xml|swift|scala|cs)$",
    re.I,
)
_IPV4 = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")


def pgpass_lines(text: str, ctx: Context, gate_ids: tuple[int, ...]) -> Iterable[Finding]:
    named: bool | None = None  # whether the text names the file: then any host goes
    for lo, hi in ctx.windows(gate_ids):
        for pattern in _PGPASS_LINES:
            for m in pattern.finditer(text, lo, hi):
                host = m.group("host")
                if host != "*" and not _IPV4.fullmatch(host):
                    if not any(c.isalpha() for c in host):
                        continue
                    if _SOURCE_FILE.search(host):
                        named = "pgpass" in text.lower() if named is None else named
                        if not named:
                            continue
                if cli_check(m.group("s")):
                    yield m.start("s"), m.end("s"), "password"


# `wandb login [flags] KEY`: a W&B API key (40 hex digits, or `local-` and 40 for a server of
# one's own) is hex a commit SHA could be; the command before it makes it a secret.
WANDB_LOGIN = re.compile(
    r"\bwandb[ \t]+login\b"
    r"(?:[ \t]+(?:--(?:host|anonymously)(?:=|[ \t]+)[^\s'\"]+|--?[A-Za-z][A-Za-z\-]*))*[ \t]+"
    r"(?:(['\"])(?P<s1>[A-Za-z0-9_\-]{32,})\1|(?P<s2>[A-Za-z0-9_\-]{32,})(?![^\s;|&)]))",
    re.ASCII,
)
WANDB_GATE = Gate(r"wandb[ \t]+login")


def wandb_check(secret: str) -> bool:
    return any(c.isdigit() for c in secret) and not placeholder(secret)
