"""Every kind of secret the scrubber knows: a table of rules, each with the gates that guard it.

Sources of the shapes (read, never copied): detect-secrets 1.5's detectors, which run as they
are (its compiled patterns, see `_detect_secrets_rules`); and for what it lacks, gitleaks' and
trufflehog's rule sets and the providers' own token documentation (one line per format below).

A rule's gates (`prefilter.Gate`) are regexes that every one of its matches contains; they use
ASCII token characters only, never whitespace, quotes or backslashes, so a gate found in a
string is also found, unchanged, in that string JSON-escaped (which is how the scrubber locates
secrets inside JSON text without parsing it). For a token with a distinctive shape the gate is
the whole shape, so the rule runs only where a real candidate occurs.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from bashgym_scrubbers_secrets.assign import assignments, calls, compared, flags, pairs
from bashgym_scrubbers_secrets.names import (
    NAME_GATES,
    basic_credentials,
    looks_random,
    random_letters,
)
from bashgym_scrubbers_secrets.prefilter import Gate, leading_words
from bashgym_scrubbers_secrets.structure import (
    CLI,
    PGPASS_GATE,
    URL,
    WANDB_GATE,
    WANDB_LOGIN,
    cli_check,
    curl_credentials,
    kubernetes_secrets,
    pgpass_lines,
    session_cookies,
    terraform_defaults,
    url_password_check,
    url_token_users,
    wandb_check,
)

if TYPE_CHECKING:
    from bashgym_scrubbers_secrets.detect import Context

Finding = tuple[int, int, str]  # start, end, placeholder type


@dataclass(eq=False)
class Rule:
    """One kind of secret.

    `patterns` run over the whole string, or (`windowed`) only over the line of each gate match
    (and `before`/`after` lines around it), for regexes that begin with a character
    class, which `re` must try at every position. `group`: redact the capture groups (those
    named `s...` if any), not the whole match. `bounded`: the match must not follow a letter or
    digit (JSON/shell escapes like `\\n` count as a boundary). `extend`: widen the match over
    the rest of a token (fixed-length regexes stop early on longer keys). `span` widens a match
    its own way; `check` rejects one. `finder` replaces `patterns` for rules that are more than
    a regex (names and their values).
    """

    type: str
    patterns: tuple[re.Pattern[str], ...] = ()
    gates: tuple[Gate, ...] = ()
    windowed: bool = False
    before: int = 0
    after: int = 0
    priority: int = 60
    group: bool = False
    bounded: bool = False
    extend: bool = False
    min_unique: int = 5
    check: Callable[[str], bool] | None = None
    span: Callable[[str, int, int], tuple[int, int]] | None = None
    finder: Callable[[str, Context, tuple[int, ...]], Iterable[Finding]] | None = None
    gate_ids: tuple[int, ...] = field(default=(), init=False)


# ---- shared helpers -------------------------------------------------------------------------

_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-]*")


def left_ok(text: str, start: int) -> bool:
    """No letter or digit right before `start`, unless it ends a `\\n`/`\\t`/`\\r` escape."""
    if start == 0 or not text[start - 1].isascii() or not text[start - 1].isalnum():
        return True
    return start >= 2 and text[start - 2] == "\\" and text[start - 1] in "nrt"


_PEM_END = re.compile(r"-----END [A-Z0-9 _-]*PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY = re.compile(r"[A-Za-z0-9+/=\s\\:,-]*")  # a block cut short: eat what looks like body
_PUTTY_END = re.compile(r"Private-MAC:[ \t]*[0-9a-fA-F]+")


def _pem_span(text: str, start: int, end: int) -> tuple[int, int]:
    """A header alone is not the key: widen to the block (or to what looks like its body)."""
    begin = text.rfind("-----", max(0, start - 6), start)
    start = begin if begin != -1 else start
    closing = _PUTTY_END if text.startswith("PuTTY", start) else _PEM_END
    close = closing.search(text, end, end + 20_000)
    if close is not None:
        return start, close.end()
    body = _PEM_BODY.match(text, end, end + 20_000)
    return start, body.end() if body else end


_JWT_SIGNATURE = re.compile(r"[A-Za-z0-9_\-+/=]*")


_PEM_HEADER_END = re.compile(r"PRIVATE KEY(?: BLOCK)?-*|PuTTY-User-Key-File-\d:")
_BASE64_CHAR = re.compile(r"[A-Za-z0-9+/]")


def _pem_check(secret: str) -> bool:
    """A private key block, not a header alone (`placeholder: "-----BEGIN PRIVATE KEY-----"`):
    40+ base64 characters after the header."""
    header = _PEM_HEADER_END.search(secret)
    body = secret[header.end() :] if header else secret
    return len(_BASE64_CHAR.findall(body[:400])) >= 40


def _jwt_span(text: str, start: int, end: int) -> tuple[int, int]:
    """detect-secrets' JWT regex ends lazily, so its match stops before the signature."""
    if text[end - 1 : end] != "." and text[end : end + 1] == ".":
        end += 1
    if text[end - 1 : end] == ".":
        end = _JWT_SIGNATURE.match(text, end).end()  # type: ignore[union-attr]
    return start, end


def _jwt_check(secret: str) -> bool:
    # ~70 ms (measured): detect-secrets on first use; this default plugin loads with every command
    from detect_secrets.plugins.jwt import JwtTokenDetector

    return JwtTokenDetector.is_formally_valid(".".join(secret.split(".")[:2]))


def _artifactory_check(secret: str) -> bool:
    """Its `AP[0-9A-F]...` password pattern also fits CamelCase names (`APCompressionTool`);
    real Artifactory keys are long and carry digits."""
    return len(secret) >= 20 and any(c.isdigit() for c in secret)


def _random_body(secret: str) -> bool:
    """Digits and letters, or letters whose case changes like a token's, not a name's."""
    return _has_digit_and_letter(secret) or random_letters(secret)


def _has_digit(secret: str) -> bool:
    return any(c.isdigit() for c in secret)


def _has_digit_and_letter(secret: str) -> bool:
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret)


_RUN = re.compile(r"(.)\1{7,}")


def _no_run(secret: str) -> bool:
    """No character eight times in a row (`sgp_5555555dAAAAA...aaaaaaaaaaaaaa`: a sample)."""
    return _RUN.search(secret) is None


def _sequential(secret: str) -> bool:
    """`1234567890123...`, `abcdef...`: a counting placeholder."""
    digits = "0123456789" * 10
    return secret.isdigit() and secret in digits


def _sk_check(secret: str) -> bool:
    """`sk-` then a key (mixed case with digits, or 32+ hex), not kebab-case words
    (`sk-tree-shaker-plugin-v2`)."""
    body = secret[3:]
    if re.search(r"[0-9a-f]{32}", body):
        return True
    if re.fullmatch(r"[a-z]+[0-9]*(?:-[a-z0-9]+)+", body):
        return False
    mixed = any(c.isupper() for c in body) and any(c.islower() for c in body)
    return mixed and any(c.isdigit() for c in body)


def _base64_pem_check(secret: str) -> bool:
    """Base64 of a PEM block (kubeconfig `client-key-data`, k8s Secrets): a private key, not a
    certificate."""
    head = secret[:80]
    try:
        decoded = base64.b64decode(head[: len(head) // 4 * 4])
    except (binascii.Error, ValueError):
        return False
    return b"PRIVATE KEY" in decoded


# ---- detect-secrets' detectors ----------------------------------------------------------------

# detect-secrets plugin class -> how to run it. Left out on purpose: the entropy detectors (they
# flag git SHAs, UUIDs, content hashes and base64 blobs, which coding transcripts are full of and
# which are worth keeping), IPPublicDetector (an IP address is not a credential), the IBM
# Cloudant/IAM/COS and SoftLayer detectors (keyword-led `name = 'value'` shapes that the naming
# rule below covers), KeywordDetector and BasicAuthDetector (replaced by the naming and URL rules
# below: the keyword detector needs quotes or a known file type; the URL one stops at `!`, `$`,
# `&`, `#` and the other reserved characters that real passwords contain).
_DETECT_SECRETS: dict[str, dict[str, Any]] = {
    "GitHubTokenDetector": {
        "type": "github-token",
        "gates": (Gate("gh[pousr]_[A-Za-z0-9_]{36}"),),
        "extend": True,
    },
    # GitLab (glpat-, gldt-, glrt-, glcbt-, ...) is covered since detect-secrets 1.5.
    "GitLabTokenDetector": {
        "type": "gitlab-token",
        "gates": (Gate("gl[a-z]{1,6}-[A-Za-z0-9_-]{20}"), Gate("GR1348941")),
        "extend": True,
    },
    "SlackDetector": {
        "type": "slack-token",
        "gates": (
            Gate("xox[abposr]-[0-9]", caseless=True),
            Gate("hooks\\.slack\\.com/services/", caseless=True),
        ),
    },
    "StripeDetector": {"type": "stripe-key", "gates": (Gate("(?:rk|sk)_live_[0-9a-zA-Z]{24}"),)},
    "OpenAIDetector": {"type": "openai-api-key", "gates": (Gate("T3BlbkFJ"),), "extend": True},
    "JwtTokenDetector": {
        "type": "jwt",
        "gates": (Gate("eyJ[A-Za-z0-9_=-]+\\."),),
        "check": _jwt_check,
        "span": _jwt_span,
    },
    "PrivateKeyDetector": {
        "type": "private-key",
        "gates": (Gate("PRIVATE KEY"), Gate("PuTTY-User-Key")),
        "priority": 90,
        "span": _pem_span,
        "check": _pem_check,
    },
    "ArtifactoryDetector": {
        "type": "artifactory-token",
        "gates": (Gate("AKC[a-zA-Z0-9]{10}"), Gate("AP[0-9A-F][a-zA-Z0-9]{8}")),
        "windowed": True,
        "check": _artifactory_check,
    },
    "AzureStorageKeyDetector": {
        "type": "azure-storage-key",
        "gates": (Gate("AccountKey=[a-zA-Z0-9+/=]{88}"),),
    },
    "DiscordBotTokenDetector": {
        "type": "discord-token",
        "gates": (
            Gate("[MNO][a-zA-Z0-9_-]{23,25}\\.[a-zA-Z0-9_-]{6}\\.[a-zA-Z0-9_-]{27}", needs=(".",)),
        ),
        "extend": True,
    },
    "MailchimpDetector": {
        "type": "mailchimp-key",
        "gates": (Gate("[0-9a-z]{32}-us[0-9]", needs=("-us",)),),
    },
    "NpmDetector": {"type": "npm-token", "gates": (Gate("_authToken="),), "group": True},
    "PypiTokenDetector": {"type": "pypi-token", "gates": (Gate("pypi-AgE"),), "extend": True},
    "SendGridDetector": {"type": "sendgrid-key", "gates": (Gate("SG\\.[a-zA-Z0-9_-]{22}\\."),)},
    "SquareOAuthDetector": {"type": "square-oauth-secret", "gates": (Gate("sq0csp-"),)},
    "TwilioKeyDetector": {
        "type": "twilio-key",
        "gates": (Gate("AC[a-z0-9]{32}"), Gate("SK[a-z0-9]{32}")),
        "extend": True,
    },
}
_SKIPPED = {
    "Base64HighEntropyString",
    "HexHighEntropyString",
    "IPPublicDetector",
    "KeywordDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "SoftlayerDetector",
    # Its regex also matches inside an AWS ARN (`arn:aws:sns:r:111122223333:aaaa...`): replaced
    # by `telegram-token` below, which wants the token's `:A` and no digit before it.
    "TelegramBotTokenDetector",
}


def _ascii(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """The same regex with ASCII classes (`\\d`, `\\w`, `\\s`), as the prefilter engines have."""
    return re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII)


def _detect_secrets_rules() -> list[Rule]:
    out = []
    for name, secret_type, denylist in _denylists():
        patterns = tuple(_ascii(re.compile(p, f)) for p, f in denylist)
        if name in _SKIPPED or not patterns:
            continue
        if name == "AWSKeyDetector":
            words = ("A3T", "AKIA", "ASIA", "ABIA", "ACCA")
            gates = (Gate("(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}", words=words),)
            out.append(Rule("aws-access-key", patterns[:1], gates, extend=True, bounded=True))
            aws = (Gate("aws", caseless=True),)
            out.append(Rule("aws-secret-key", patterns[1:], aws, windowed=True, group=True))
            continue
        spec = _DETECT_SECRETS.get(name)
        if spec is None:  # a detector from a later release: run it on everything, typed by name
            slug = re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")
            out.append(Rule(slug, patterns, group=any(p.groups for p in patterns)))
            continue
        out.append(Rule(patterns=patterns, **spec))
    return out


Denylist = list[tuple[str, int]]  # a detector's regexes: (pattern, flags)


def _denylists() -> list[tuple[str, str, Denylist]]:
    """Each detect-secrets detector's class name, secret type and regexes, in its own order;
    read from the user's cache when this release of detect-secrets wrote it there. Why a cache:
    importing detect-secrets (it imports requests) was ~0.1 s of every run's start-up
    (measured), for a table that changes only with its version."""
    import importlib.metadata
    import json

    from bashgym_scrubbers_secrets.cache import cache_file, write_atomically

    version = importlib.metadata.version("detect-secrets")
    path = cache_file("detect-secrets", f"{version}.json")
    try:
        return [(name, kind, [(p, f) for p, f in pats]) for name, kind, pats in
                json.loads(path.read_text())]  # fmt: skip
    except (OSError, ValueError, TypeError):
        pass
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    table = [
        (
            cls.__name__,
            cls.secret_type,
            [(p.pattern, p.flags) for p in getattr(cls, "denylist", None) or ()],
        )
        for cls in get_mapping_from_secret_type_to_class().values()
    ]
    write_atomically(path, json.dumps(table).encode())
    return table


# ---- token formats detect-secrets 1.5 does not know --------------------------------------------

# (type, regex, left-bounded, right-bounded, check). The regex is also the rule's gate, so it
# uses no lookarounds; `right` adds to the rule's regex only "no letter or digit after" (1),
# "no token character (letter, digit, `_`, `-`) after" (2: a fixed-length format that a longer
# run is not), or 2 plus `~` (3).
_T = tuple[str, str, bool, bool, Callable[[str], bool] | None]
_TOKENS: list[_T] = [
    # AWS STS session tokens (IQoJb3JpZ2luX2Vj = base64 "origin_ec"), Bedrock long-lived keys
    ("aws-session-token", r"(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/=]{60,}", False, 0, None),
    ("aws-bedrock-key", r"ABSK[A-Za-z0-9+/]{100,}={0,2}", True, False, None),
    # GitHub fine-grained PATs (detect-secrets knows only ghp_/gho_/ghu_/ghs_/ghr_)
    ("github-token", r"github_pat_[A-Za-z0-9_]{40,}", False, False, None),
    # (glptt-, glimt-, glagent-, gloas-, glsoat-, glcbt-: detect-secrets, at their exact lengths)
    ("gitlab-token", r"gl(?:ffct|sa)-[A-Za-z0-9_\-]{20,}", 1, 0, None),
    ("slack-token", r"xapp-[0-9]-[A-Za-z0-9\-]{20,}", False, False, None),
    ("slack-token", r"xox[ep]-[0-9]-[A-Za-z0-9\-]{20,}", False, False, None),  # config tokens
    # user and refresh tokens (detect-secrets: xoxp only, and no xoxe): team-user-id-hex
    ("slack-token", r"xox[ep](?:-[0-9]{10,13}){3}-[A-Za-z0-9]{28,34}", False, 1, None),
    # any scheme (http too) and any case of path (detect-secrets: https and T.../B... only)
    (
        "slack-webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_\-]{20,}",
        False,
        False,
        None,
    ),
    (
        "telegram-token",
        r"[0-9]{5,16}:A[0-9A-Za-z_\-]{34}",
        0,
        1,
        lambda s: _has_digit_and_letter(s[-34:]),
    ),
    # Sourcegraph, EasyPost, OpenShift (oc login), Jenkins credentials.xml, 1Password secret keys
    ("sourcegraph-token", r"sgp_(?:[A-Fa-f0-9]{16}_|local_)?[A-Fa-f0-9]{40}", 1, 1, _no_run),
    ("easypost-key", r"EZ[AT]K[A-Za-z0-9]{54}", True, True, _has_digit_and_letter),
    ("openshift-token", r"sha256~[A-Za-z0-9_\-]{43}", True, True, None),
    ("jenkins-secret", r"\{AQAAABAAAA[A-Za-z0-9+/]{20,}={0,2}\}", False, False, None),
    (
        "onepassword-secret-key",
        r"A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})(?:-[A-Z0-9]{5}){3}",
        True,
        True,
        None,
    ),
    ("facebook-app-token", r"[0-9]{15,16}\|[A-Za-z0-9_\-]{27}", True, True, None),
    # Stripe: test-mode and restricted keys, any length (detect-secrets: live, exactly 24)
    ("stripe-key", r"(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{20,}", True, False, None),
    ("adobe-client-secret", r"p8e-[A-Za-z0-9]{32}", True, 2, _has_digit_and_letter),
    ("intra42-secret", r"s-s4t2(?:ud|af)-[a-f0-9]{64}", True, True, None),
    ("stripe-webhook-secret", r"whsec_[A-Za-z0-9+/=]{20,}", True, False, None),
    ("anthropic-api-key", r"sk-ant-[A-Za-z0-9_\-]{20,}", False, False, None),
    # OpenAI project/service-account/admin keys: `-`/`_` where the legacy regex wants [A-Za-z0-9]
    ("openai-api-key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}", False, False, None),
    # OpenRouter, DeepSeek, Moonshot and most OpenAI-compatible providers: sk-<32+>
    ("api-key", r"sk-[A-Za-z0-9][A-Za-z0-9_\-]{30,}", True, False, lambda s: _sk_check(s)),
    # (random: `hf_requiredCharacteristicTypes...` is an Objective-C name)
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}", True, False, lambda s: _random_body(s[3:])),
    ("huggingface-token", r"api_org_[A-Za-z0-9]{30,}", True, False, None),
    # exactly 39 characters: a longer run is some other blob that happens to hold `AIza`
    ("google-api-key", r"AIza[0-9A-Za-z_\-]{35}", True, 2, None),
    ("google-oauth-secret", r"GOCSPX-[A-Za-z0-9_\-]{24,}", False, False, None),
    ("google-oauth-token", r"ya29\.[A-Za-z0-9_\-]{30,}", True, False, None),
    ("google-oauth-token", r"1//0[A-Za-z0-9_\-]{40,}", True, False, _has_digit_and_letter),
    ("nvidia-api-key", r"nvapi-[A-Za-z0-9_\-]{40,}", False, False, None),
    ("groq-api-key", r"gsk_[A-Za-z0-9]{40,}", True, False, None),
    ("replicate-token", r"r8_[A-Za-z0-9]{30,}", True, False, None),
    ("perplexity-api-key", r"pplx-[A-Za-z0-9]{40,}", True, False, None),
    ("xai-api-key", r"xai-[A-Za-z0-9]{60,}", True, False, None),
    ("langsmith-key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", False, False, None),
    ("pinecone-key", r"pcsk_[A-Za-z0-9_]{40,}", False, False, None),
    ("tavily-key", r"tvly-(?:dev-|prod-)?[A-Za-z0-9]{24,}", False, False, None),
    # package registries
    ("npm-token", r"npm_[A-Za-z0-9]{36,}", True, False, None),
    ("rubygems-token", r"rubygems_[a-f0-9]{48}", False, False, None),
    ("crates-token", r"cio[A-Za-z0-9]{32}", True, True, _has_digit_and_letter),
    ("nuget-key", r"oy2[a-z0-9]{43}", True, True, _has_digit_and_letter),
    ("docker-hub-token", r"dckr_(?:pat|oat)_[A-Za-z0-9_\-]{20,}", False, False, None),
    ("clojars-token", r"CLOJARS_[a-z0-9]{60}", False, False, None),
    ("packagist-token", r"packagist_[ou]ut_[a-f0-9]{68}", False, False, None),
    ("jfrog-token", r"cmVmdGtuOjAxOj[A-Za-z0-9]{40,}", True, False, None),  # base64 "reftkn:01:"
    # payments, messaging, webhooks
    ("shopify-token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", False, False, None),
    ("square-token", r"sq0atp-[A-Za-z0-9_\-]{22,}", False, False, None),
    ("square-token", r"EAAA[A-Za-z0-9_\-+=]{60,}", True, False, None),
    ("braintree-token", r"access_token\$production\$[a-z0-9]{16}\$[a-f0-9]{32}", 0, 0, None),
    ("mailgun-key", r"key-[a-f0-9]{32}", True, True, None),
    (
        "discord-webhook",
        r"discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_\-]{60,}",
        0,
        0,
        None,
    ),
    (
        "teams-webhook",
        r"webhook\.office\.com/webhookb2/[A-Za-z0-9@\-]{30,}/IncomingWebhook/[A-Za-z0-9]{32}/[A-Za-z0-9\-]{36}",
        0,
        0,
        None,
    ),
    ("postman-key", r"PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}", False, False, None),
    ("twitter-token", r"A{22}[A-Za-z0-9%]{30,}", True, False, lambda s: "%" in s),
    ("facebook-token", r"EAA[BCDGIM][A-Za-z0-9]{80,}", True, False, _has_digit_and_letter),
    ("firebase-key", r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}", False, False, None),
    # developer platforms and infrastructure
    ("linear-key", r"lin_api_[A-Za-z0-9]{40}", False, False, None),
    ("notion-token", r"ntn_[A-Za-z0-9]{40,}", True, False, lambda s: not _sequential(s[4:])),
    ("notion-token", r"secret_[A-Za-z0-9]{43}", True, True, _has_digit_and_letter),
    ("airtable-token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}", True, False, None),
    ("newrelic-key", r"NRAK-[A-Z0-9]{27}", False, False, None),
    # user tokens are 64 hex digits exactly; org tokens base64 JSON (`sntrys_eyJ...`)
    ("sentry-token", r"sntryu_[a-f0-9]{64}", True, 2, None),
    ("sentry-token", r"sntrys_eyJ[A-Za-z0-9+/=_]{40,}", True, False, None),
    ("grafana-token", r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", False, False, None),
    ("grafana-token", r"glc_[A-Za-z0-9+/]{32,}={0,2}", True, False, None),
    ("supabase-token", r"sbp_[a-f0-9]{40}", False, False, None),
    ("doppler-token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9_\-]{40,}", False, False, None),
    ("vault-token", r"hv[sb]\.[A-Za-z0-9_\-]{90,}", True, False, None),
    ("terraform-token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}", False, False, None),
    ("pulumi-token", r"pul-[a-f0-9]{40}", True, False, None),
    ("digitalocean-token", r"do[por]_v1_[a-f0-9]{64}", False, False, None),
    ("databricks-token", r"dapi[a-f0-9]{32}(?:-[0-9])?", True, False, None),
    ("heroku-key", r"HRKU-[A-Za-z0-9_\-]{58,}", False, False, None),
    ("alibaba-key", r"LTAI[A-Za-z0-9]{20}", True, True, None),
    # (its own characters but `.` must not follow: `...0,4~q8Q~<37 chars>~yk0,` in a Freenet
    # USK is no client secret; a sentence's full stop may)
    ("azure-ad-client-secret", r"[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.\-]{31,34}", True, 3, None),
    ("flyio-token", r"fo1_[A-Za-z0-9_\-]{43}", False, False, None),
    ("flyio-token", r"fm[12][ar]?_[A-Za-z0-9+/]{100,}={0,3}", True, False, None),
    ("age-secret-key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", 0, 0, None),
    ("onepassword-token", r"ops_eyJ[A-Za-z0-9+/]{100,}={0,3}", False, False, None),
    ("mapbox-token", r"sk\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}", True, False, None),
    ("figma-token", r"figd_[A-Za-z0-9_\-]{40}", False, False, None),
    ("contentful-token", r"CFPAT-[A-Za-z0-9_\-]{43}", False, False, None),
    ("sonarqube-token", r"sq[apu]_[a-f0-9]{40}", True, False, None),
    ("buildkite-token", r"bkua_[a-f0-9]{40}", False, False, None),
    ("dynatrace-token", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}", False, False, None),
    ("cloudflare-key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}", False, False, None),
    ("planetscale-token", r"pscale_(?:pw|tkn|oauth)_[A-Za-z0-9_=.\-]{32,}", False, False, None),
    ("private-key", r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]{20,}", True, False, _base64_pem_check),
]


# Literals inside token shapes that start with a character class: a quick "no" for `re`.
_NEEDS = {"terraform-token": (".atlasv1.",), "azure-ad-client-secret": ("Q~",)}
_NEEDS["twitter-token"] = ("A" * 22,)
_NEEDS["telegram-token"] = (":A",)
_NEEDS["facebook-app-token"] = ("|",)
# A lookbehind for the rule's regex only (the engines' gates have none): a Telegram token's bot
# id never continues a longer number (`...:111122223333:aaaa` in an ARN).
_LEFT = {"telegram-token": r"(?<![0-9])"}


_RIGHT = ("", r"(?![A-Za-z0-9])", r"(?![A-Za-z0-9_\-])", r"(?![A-Za-z0-9_\-~])")


def _token_rules() -> list[Rule]:
    out = []
    for type_, pattern, bounded, right, check in _TOKENS:
        left = _LEFT.get(type_, "")
        regex = re.compile(left + pattern + _RIGHT[int(right)], re.ASCII)
        priority = 52 if type_ == "api-key" else 70  # the generic sk- loses to any
        out.append(
            Rule(
                type_,
                (regex,),
                (Gate(pattern, needs=_NEEDS.get(type_, ())),),
                bounded=bool(bounded),
                extend=not right,
                check=check or None,
                priority=priority,
            )
        )
    return out


# ---- structure: private keys, URLs, headers, command lines (finders in structure.py) --------


def _structural_rules() -> list[Rule]:
    rules = [
        # A PEM block whose header detect-secrets does not list (ENCRYPTED PRIVATE KEY, ...).
        Rule(
            "private-key",
            (re.compile(r"-----BEGIN [A-Z0-9 _-]{0,100}PRIVATE KEY(?: BLOCK)?-----"),),
            (Gate("PRIVATE KEY"),),
            priority=90,
            span=_pem_span,
            check=_pem_check,
        ),
        Rule(
            "password",
            (URL,),
            (Gate("://"),),
            windowed=True,
            group=True,
            priority=55,
            min_unique=1,
            check=url_password_check,
        ),
        Rule("api-key", gates=(Gate("://"),), priority=55, finder=url_token_users),
        Rule(
            "bearer-token",
            (re.compile(r"(?i:bearer)[ \t]+(?P<s>[A-Za-z0-9\-._~+/]+=*)", re.ASCII),),
            (Gate("bearer", caseless=True),),
            windowed=True,
            group=True,
            priority=50,
            check=lambda s: looks_random(s) or (s.startswith("eyJ") and s.count(".") == 2),
        ),
        Rule(
            "basic-auth",
            (re.compile(r"(?i:basic)[ \t]+(?P<s>[A-Za-z0-9+/]{8,}={0,2})", re.ASCII),),
            (Gate("basic", caseless=True),),
            windowed=True,
            group=True,
            priority=50,
            min_unique=1,
            check=basic_credentials,
        ),
        # SoftLayer's API endpoint with the key in its path (`api.softlayer.com/soap/v3/KEY`).
        Rule(
            "softlayer-key",
            (
                re.compile(
                    r"api\.softlayer\.com/(?:soap|rest|xmlrpc)/v3(?:\.1)?/(?P<s>[a-z0-9]{64})"
                    r"(?![a-z0-9])",
                    re.ASCII | re.IGNORECASE,
                ),
            ),
            (Gate("softlayer\\.com/", caseless=True),),
            group=True,
            priority=60,
        ),
        # Bundler's per-host credentials (`BUNDLE_GEMS__CONTRIBSYS__COM=user:password`, the
        # Sidekiq Enterprise and GitHub Packages sources): the name holds no secret word.
        Rule(
            "password",
            (
                re.compile(
                    r"BUNDLE_[A-Z0-9_]*?__[A-Z0-9_]+(?:\\?[\"'])?[ \t]*[:=][ \t]*(?:\\?[\"'])?"
                    r"(?P<s>[A-Za-z0-9._%+\-]+:[^\s\"'\\;&]+)",
                    re.ASCII,
                ),
            ),
            (Gate("BUNDLE_"),),
            windowed=True,
            group=True,
            priority=45,
            min_unique=1,
        ),
        # ~/.netrc: `machine HOST login USER password SECRET`, on one line or several.
        Rule(
            "password",
            (re.compile(r"machine\s+\S+\s+(?:login\s+\S+\s+)?password\s+(?P<s>\S+)", re.ASCII),),
            (Gate("machine"),),
            group=True,
            priority=45,
            min_unique=1,
            check=cli_check,
        ),
    ]
    rules.append(
        Rule("password", gates=(Gate("curl"), Gate("wget")), priority=45, finder=curl_credentials)
    )
    rules.append(Rule("password", gates=(PGPASS_GATE,), priority=45, finder=pgpass_lines))
    rules.append(
        Rule(
            "wandb-api-key",
            (WANDB_LOGIN,),
            (WANDB_GATE,),
            windowed=True,
            group=True,
            priority=60,
            check=wandb_check,
        )
    )
    rules.append(
        Rule("secret", gates=(Gate(r'variable[ \t]+"'),), priority=42, finder=terraform_defaults)
    )
    cookie = Gate("cookie", caseless=True)
    rules.append(Rule("session-cookie", gates=(cookie,), priority=42, finder=session_cookies))
    rules.append(
        Rule(
            "secret",
            gates=(Gate("kind:[ \t]*[\"']?secret", caseless=True),),
            priority=42,
            finder=kubernetes_secrets,
        )
    )
    for words, pattern in CLI:
        rules.append(
            Rule(
                "password",
                (re.compile(pattern, re.ASCII),),
                tuple(w if isinstance(w, Gate) else Gate(w) for w in words),
                windowed=True,
                group=True,
                priority=45,
                min_unique=1,
                check=cli_check,
            )
        )
    rules.append(
        Rule("secret", gates=(NAME_GATE, QUOTED_PAIR_GATE), priority=40, finder=assignments)
    )
    gates = (FLAG_GATE, ENV_GATE, GO_VAR_GATE, SETENV_GATE)
    rules.append(Rule("secret", gates=gates, priority=40, finder=flags))
    rules.append(
        Rule("secret", gates=(COMPARED_GATE, BARE_QUOTED_GATE), priority=40, finder=compared)
    )
    rules.append(Rule("secret", gates=(PAIR_GATE, XML_GATE), priority=35, finder=pairs))
    rules.append(Rule("secret", gates=(CALL_GATE,), priority=35, finder=calls))
    return rules


# Gates of the naming rules. Each allows any run of backslashes before a quote and `\t` for a
# tab, so it still matches after any depth of JSON escaping (`\"password\": ...` inside a
# tool call's arguments inside a trace).
_W = "|".join(NAME_GATES)
NAME_GATE = Gate(
    rf"""(?:{_W})[A-Za-z0-9_.\-]*(?:\\*["'`]|\]|\[[0-9]*)*(?:[ \t]|\\+t)*"""
    r"""(?:[?.+!]?[:=]|-[ \t]+\\*["'`]|(?:\?\?|\|\|)[ \t]*\\*["'`])""",
    caseless=True,
    words=NAME_GATES,
    tail=True,
)  # a secret-looking name, then `=`, `:`, `:=`, `=>` (after a closing quote or bracket), or a
#    quoted fallback (`?? "..."`, `|| '...'`)
CALL_GATE = Gate(
    rf"""(?:{_W})[A-Za-z0-9_]*\([ \t]*\\*["'`]""", caseless=True, words=NAME_GATES
)  # setApiKey("..."), withToken("..."), .password("..."): the call's name is read on the line
#    (a leading `[A-Za-z0-9_]*` made Hyperscan's start-of-match database 6x slower to compile)
FLAG_GATE = Gate(
    rf"-[A-Za-z0-9_.\-]*(?:{_W})[A-Za-z0-9_.\-]*(?:[ \t]|\\+t)+[^\s-]", caseless=True
)  # --password VALUE, -storepass VALUE
QUOTED_PAIR_GATE = Gate(
    rf"""(?:{_W})[A-Za-z0-9_.\-]*\\*["'`](?:[ \t]|\\+t)*,(?:[ \t]|\\+t)*\\*["'`]""",
    caseless=True,
    words=NAME_GATES,
    tail=True,
)  # define('DB_PASSWORD', '...'), setenv("API_KEY", "...")
GO_VAR_GATE = Gate(
    rf"(?:var|const)[ \t]+[A-Za-z0-9_]*(?:{_W})[A-Za-z0-9_]*"
    r"[ \t]+\*?(?:\[\])?[A-Za-z_][A-Za-z0-9_.]*[ \t]*=",
    caseless=True,
    words=("var", "const"),
)  # Go: var apiToken string = "..."
COMPARED_GATE = Gate(
    rf"""\\*["'`][ \t]*[!=]==?[ \t]*[A-Za-z0-9_.]*(?:{_W})""", caseless=True, needs=("=",)
)  # if ("..." == password): the value before the name
BARE_QUOTED_GATE = Gate(
    rf"""(?:{_W})[A-Za-z0-9_.\-]*[ \t]+\\*["'][^"'\\\n]+\\*["'];""",
    caseless=True,
    words=NAME_GATES,
)  # secret "...";  (no separator at all)
SETENV_GATE = Gate(  # looser than SETENV_COMMANDS (its flags' `[xU]` slowed Hyperscan's compile)
    r"(?:setx|setenv|set[ \t]+-[A-Za-z]+|configure[ \t]+set|#[ \t]*define)[ \t]+[A-Za-z_]",
    caseless=True,
    words=("setx", "setenv", "set", "configure", "#"),
)  # setx NAME VALUE, setenv NAME VALUE, fish's set -gx NAME VALUE, aws configure set NAME VALUE,
#    #define NAME VALUE
ENV_GATE = Gate(
    rf"(?:env|arg)[ \t]+[A-Za-z0-9_]*(?:{_W})[A-Za-z0-9_]*[ \t]+[^\s=]",
    caseless=True,
    words=("env", "arg"),
)  # Dockerfile ENV NAME VALUE
PAIR_GATE = Gate(
    r"""value(?:\\*["'])?(?:[ \t]|\\+t)*[:=]""", caseless=True, words=("value",), tail=True
)  # name: DB_PASSWORD / value: ...
XML_GATE = Gate("</")


# ---- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    gates: tuple[Gate, ...]
    by_gate: tuple[tuple[int, ...], ...]  # gate id -> rule indices
    always: tuple[int, ...]  # rules with no gate: run on every string
    escapes: tuple[int, ...] = ()  # gates of JSON escapes that can hide a gate (no rule's)

    def fired(self, gate_ids: Iterable[int]) -> list[Rule]:
        """The rules that can match where `gate_ids` occur, in table order."""
        idx = set(self.always)
        for g in gate_ids:
            idx.update(self.by_gate[g])
        return [self.rules[i] for i in sorted(idx)]


@lru_cache(maxsize=1)
def ruleset() -> RuleSet:
    """Most specific first; gates deduplicated across rules. Built once (a few milliseconds)."""
    structural = _structural_rules()
    rules = (structural[0], *_token_rules(), *_detect_secrets_rules(), *structural[1:])
    gates: list[Gate] = []
    ids: dict[Gate, int] = {}
    by_gate: list[list[int]] = []
    always = []
    for i, rule in enumerate(rules):
        mine = []
        for gate in rule.gates:
            if not gate.words and (words := leading_words(gate.pattern)):
                lowered = tuple(w.lower() for w in words) if gate.caseless else words
                gate = replace(gate, words=lowered)  # `re` finds them at memchr speed
            if gate not in ids:
                ids[gate] = len(gates)
                gates.append(gate)
                by_gate.append([])
            mine.append(ids[gate])
            by_gate[ids[gate]].append(i)
        rule.gate_ids = tuple(mine)
        if not mine:
            always.append(i)
    escapes = []
    for gate in ESCAPE_GATES:
        escapes.append(len(gates))
        gates.append(gate)
        by_gate.append([])
    return RuleSet(
        rules, tuple(gates), tuple(tuple(r) for r in by_gate), tuple(always), tuple(escapes)
    )


# JSON escapes that can hide a gate in JSON text (`\u0041KIA...` is `AKIA...`, `:\/\/` is `://`).
# No rule owns these gates: found in the same scan as the others, they tell the scrubber to parse
# and walk that JSON text rather than look for gates in it raw. The only gates with a backslash.
ESCAPE_GATES = (Gate(r"\\/"), Gate(r"\\u00[2-7][0-9a-fA-F]"))
