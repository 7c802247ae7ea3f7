"""The secrets corpus, shape by shape: every planted secret redacted (as text, inside JSON, inside
JSON inside JSON), every look-alike untouched, and every prefilter backend giving the same
output as running every rule on every string."""

from __future__ import annotations

import json

import pytest
from bashgym_scrubbers_secrets import PLACEHOLDER_RE, Redactor, detector_types
from bashgym_scrubbers_secrets.names import NAME_GATES, classify
from bashgym_scrubbers_secrets.prefilter import available
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from secrets_corpus import LOOKALIKES, PLANTED, probes, render

IDS = [p.shape for p in PLANTED]


def leaked(secret: str, out: str) -> list[str]:
    return [probe for probe in probes(secret) if probe in out]


def test_the_corpus_is_broad():
    assert len(set(IDS)) == len(IDS) >= 50
    assert len({p.secret for p in PLANTED}) == len(PLANTED)
    assert {p.type for p in PLANTED if p.type} <= set(detector_types())


@pytest.mark.parametrize("planted", PLANTED, ids=IDS)
def test_planted_secret_is_redacted_in_text(planted):
    scrubber = Redactor()
    out = scrubber.text(render(planted))
    assert not leaked(planted.secret, out), out
    assert PLACEHOLDER_RE.search(out)
    if planted.type:
        assert f"[REDACTED:{planted.type}]" in out, out
    assert sum(scrubber.counts.values()) >= 1
    assert Redactor().text(out) == out  # placeholders are never redacted again


def _trace_like(text: str) -> str:
    """`text` where a transcript has it: a tool call's JSON arguments inside a trace."""
    args = json.dumps({"command": "cat config", "content": text})
    messages = [
        {"role": "user", "content": "deploy"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "Write", "arguments": args}]},
        {"role": "tool", "content": text},
    ]
    return json.dumps({"id": "t1", "messages": messages}, separators=(",", ":"))  # fmt: skip


WRAPS = {
    "json-value": lambda t: json.dumps({"output": t, "n": 1}),
    "json-ascii": lambda t: json.dumps({"output": "café " + t}),  # \u00e9 escapes
    "trace": _trace_like,
    "json-string": json.dumps,  # a cell holding one JSON-encoded string
    "escaped-in-log": lambda t: f"INFO body={json.dumps(t)} status=200",  # not JSON as a whole
}


@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize("planted", PLANTED, ids=IDS)
def test_planted_secret_is_redacted_inside_json(planted, wrap):
    doc = WRAPS[wrap](render(planted))
    out = Redactor().text(doc)
    assert not leaked(planted.secret, out), out
    if wrap != "escaped-in-log":
        assert json.loads(out)  # still valid JSON


@pytest.mark.parametrize("text", LOOKALIKES, ids=range(len(LOOKALIKES)))
def test_lookalike_is_left_untouched(text):
    scrubber = Redactor()
    assert scrubber.text(text) == text
    for wrap in WRAPS.values():
        doc = wrap(text)
        assert scrubber.text(doc) == doc
    assert not scrubber.counts


def test_lookalikes_do_not_hide_a_secret_next_to_them():
    planted = PLANTED[0]
    out = Redactor().text("\n".join([*LOOKALIKES, render(planted)]))
    assert not leaked(planted.secret, out)
    for text in LOOKALIKES:
        assert text in out


# ---- names ---------------------------------------------------------------------------------

SECRET_NAMES = [
    "password", "DB_PASSWORD", "PGPASSWORD", "dbPass", "mysql_pwd", "api_key", "apiKey",
    "X-API-Key", "clientSecret", "client-secret", "secretAccessKey", "AccountKey", "auth_token",
    "_authToken", "GITHUB_TOKEN", "access_token", "Authorization", "credentials", "private_key",
    "SECRET_KEY_BASE", "passphrase", "DB_PW",
]  # fmt: skip
NOT_SECRET_NAMES = [
    "password_hash", "SSH_KEY_PATH", "max_tokens", "token_count", "keyboard", "monkey",
    "public_key", "primary", "secret_name", "token_type", "PASSWORD_MIN_LENGTH", "bypass",
    "LANGFUSE_PUBLIC_KEY", "SET_EXTRA_PARAMETERS_TO_PASS_THROUGH", "signature",
    "author", "api_key_id", "tokenizer", "keys",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_looking_names(name):
    assert classify(name) is not None


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_names_that_are_about_secrets_not_secrets(name):
    assert classify(name) is None or classify(name).strict


NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-.0"


@given(st.text(st.sampled_from(NAME_CHARS), max_size=30))
@settings(max_examples=300)
def test_every_secret_name_holds_a_name_gate(name):
    """The naming rules run only where a gate word occurs: a name without one must never
    classify as secret, or the prefilter would skip a rule that could match."""
    if classify(name) is not None:
        assert any(word in name.lower() for word in NAME_GATES)


# ---- prefilter backends ------------------------------------------------------------------------


def _samples() -> list[str]:
    texts = [render(p) for p in PLANTED] + LOOKALIKES
    return texts + [wrap(t) for t in texts for wrap in WRAPS.values()]


@pytest.mark.parametrize("backend", ["hyperscan", "re2", "python"])
def test_every_backend_gives_the_output_of_running_every_rule(backend):
    if backend not in available():
        module = {"hyperscan": "hyperscan", "re2": "google-re2"}[backend]
        pytest.skip(f"{module} is not installed here")
    fast, reference = Redactor(backend=backend), Redactor(backend="none")
    assert fast.backend == backend
    for text in _samples():
        assert fast.text(text) == reference.text(text), text
    assert fast.counts == reference.counts


SURROUNDING = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=120)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    planted=st.sampled_from(PLANTED),
    before=SURROUNDING,
    after=SURROUNDING,
    sep=st.sampled_from([" ", "\n", "\t", '"', "'", "=", ": ", "(", ", ", "`", "\n\n", "é", "İ"]),
)
def test_random_surroundings_same_output_on_every_backend(planted, before, after, sep):
    text = before + sep + render(planted) + sep + after
    outs = {b: Redactor(backend=b).text(text) for b in [*available(), "none"]}
    assert len(set(outs.values())) == 1, outs
    doc = json.dumps({"a": text, "b": [before, after]})
    docs = {b: Redactor(backend=b).text(doc) for b in [*available(), "none"]}
    assert len(set(docs.values())) == 1, docs


def test_every_backend_agrees_on_generated_transcripts(repo, tmp_path):
    """Claude Code sessions as the bench generates them (bench/_claude_corpus.py), with
    secrets planted through the trace JSON: the same rows out of every backend."""
    import sys

    sys.path.insert(0, str(repo / "bench"))
    try:
        from _claude_corpus import generate
        from scrub_throughput import plant, read_rows
    finally:
        sys.path.remove(str(repo / "bench"))
    generate(tmp_path / "projects", 1_500_000, seed=3)
    rows, planted = plant(read_rows(tmp_path / "projects"), every_kb=4, seed=3)
    assert planted > 50
    outs = {}
    for backend in [*available(), "none"]:
        scrubber = Redactor(backend=backend)
        outs[backend], touched = scrubber.frame(rows)
        assert touched == len(rows) and sum(scrubber.counts.values()) >= planted
    reference = outs.pop("none")
    for backend, out in outs.items():
        assert out.equals(reference), backend


@pytest.mark.parametrize(
    "text",
    [
        '{"cmd": "deploy --token é1234567890abcdefXYZ"}',  # a gate match ending in é
        '{"a": "password \x80"}',
        "key: 🚀 token: 🚀🚀 " + render(PLANTED[0]),
        '{"İ": "İİ password=Secr3tİ9", "b": "' + render(PLANTED[1]).replace("\n", "\\n") + '"}',
    ],
)
def test_non_ascii_next_to_gates_same_output_on_every_backend(text):
    outs = {b: Redactor(backend=b).text(text) for b in [*available(), "none"]}
    assert len(set(outs.values())) == 1, outs


def test_hyperscan_database_cached_loaded_and_rebuilt_when_unreadable(tmp_path, monkeypatch):
    """The compiled gates come from the user's cache dir after the first compile; a cached
    file Hyperscan refuses (another build, a torn write) is compiled again and replaced."""
    if "hyperscan" not in available():
        pytest.skip("hyperscan is not installed here")
    import hyperscan
    from bashgym_scrubbers_secrets import prefilter
    from bashgym_scrubbers_secrets.rules import ruleset

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    gates = ruleset().gates
    compiled = prefilter.HyperscanPrefilter(gates)  # compiles both sets, caches them
    for text in _samples():
        compiled.anchors(text)
    cached = sorted((tmp_path / "bashgym" / "hyperscan").glob("gates-*.db"))
    assert len(cached) == 2

    def no_compiling(*_: object, **__: object) -> None:
        raise AssertionError("compiled again")

    with monkeypatch.context() as patched:
        patched.setattr(hyperscan, "Database", no_compiling)
        loaded = prefilter.HyperscanPrefilter(gates)  # both from the cache
        for text in _samples():
            assert loaded.fired(text) == compiled.fired(text), text
            assert loaded.anchors(text) == compiled.anchors(text), text
    for path in cached:
        path.write_bytes(b"not a database")
    again = prefilter.HyperscanPrefilter(gates)
    for text in _samples()[:20]:
        assert again.anchors(text) == compiled.anchors(text), text
    assert all(path.read_bytes() != b"not a database" for path in cached)
