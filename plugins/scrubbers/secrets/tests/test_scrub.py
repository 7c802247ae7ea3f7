"""Secret scrubbing: typed placeholders, .env and URL rules, traces kept valid, no false positives
on ordinary code, the allow-list, and a real `bashgym run` whose output holds no planted secret."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from bashgym_scrubbers_secrets import PLACEHOLDER_RE, Scrubbing, ScrubSettings, detector_types
from bashgym_scrubbers_secrets import Redactor as Scrubber
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bashgym import hookimpl
from bashgym.contracts import Source
from bashgym.plugins import PluginHost
from bashgym.records import Message, ToolCall, Trace, trace_from_row, trace_to_row


def scrub_dataset(dataset: pd.DataFrame, settings: ScrubSettings) -> tuple[pd.DataFrame, dict]:
    """What the engine does before the sinks: the scrubbed rows and run.json's `scrub`."""
    scrubbing = Scrubbing.open(settings, PluginHost().registry)
    return scrubbing.frame(dataset), scrubbing.report()


# Fake but well-formed keys (right prefixes, lengths and alphabets); none is a live credential.
AWS = "AKIAZ3MQ7TQXWJ4FJ6PA"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lw3R2Vd"
GITHUB = "ghp_" + "R8tK2mQ9vX4wL7pN3bZ6cJ1fH5dG0sA2eU7i"
SLACK = "xoxb-2417359082-5310829347719-Qk8vR3nT6pLw2sXy9mZa4bCd"
STRIPE = "sk_live_" + "51Hx9K2eZvKYlo2C8u4Tq7Wm3Rb6Yd0PnAbCdEf"
OPENAI = "sk-proj-" + "Xy7_kP2-mQ9vR4tL8wN3bZ6cJ1fH5dG0sA2eU7iO4yT9rE3wQ6uI8oP1aS5dF7gH2j"
ANTHROPIC = (
    "sk-ant-api03-" + "Zq3_Rt7-Lm2Xv8Np4Kc6Wb1Hd9Fg5Js0Ty3Ue7Io2Pa6Sd4Fg8Hj1Kl5Zx9Cv3Bn7M" + "AA"
)
HF = "hf_" + "kLmNoPqRsTuVwXyZaBcDeFgHiJkLmNoPqR"
GOOGLE = "AIza" + "SyD3k9Qx7Lm2Vb8Np4Rt6Wc1Hd9Fg5Js0Tq"
NVIDIA = "nvapi-" + "Qx7Lm2Vb8Np4Rt6Wc1Hd9Fg5Js0Ty3Ue7Io2Pa6Sd4Fg8Hj1Kl5Zx9Cv3Bn"
GITLAB = "glpat-" + "xYz12AbC34dEf56GhI78"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwia"
    "WF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM_BODY = (
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n"
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n"
)
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----"
DB_PASSWORD = "Tr0ub4dor-3xq"
DB_URL = f"postgres://app_user:{DB_PASSWORD}@db.internal:5432/prod"
DJANGO_SECRET = "8f3k2j5h6g7d9s0a1q2w3e4r5t6y7u8i"
REDIS_PASSWORD = "n7Yq2pLx9Vw4"
ENV_BLOCK = (
    f"DJANGO_SECRET_KEY={DJANGO_SECRET}\n"
    f"REDIS_PASSWORD='{REDIS_PASSWORD}'\n"
    f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}\n"
    "DEBUG=true\n"
    "PORT=8000\n"
)
KEYS = {  # secret -> the placeholder type it must become
    AWS: "aws-access-key",
    GITHUB: "github-token",
    SLACK: "slack-token",
    STRIPE: "stripe-key",
    OPENAI: "openai-api-key",
    ANTHROPIC: "anthropic-api-key",
    HF: "huggingface-token",
    GOOGLE: "google-api-key",
    NVIDIA: "nvidia-api-key",
    GITLAB: "gitlab-token",
    JWT: "jwt",
}
PLANTED = [*KEYS, PEM_BODY.split("\n")[1], DB_PASSWORD, DJANGO_SECRET, REDIS_PASSWORD, AWS_SECRET]
ALLOWED_LITERAL = "AKIAIOSFODNN7EXAMPLE"  # AWS's documentation example key
ALLOWED_BY_REGEX = "sk_live_TESTFIXTURE0000000000000000"
ALLOW = [ALLOWED_LITERAL, r"re:sk_live_TESTFIXTURE\w*"]


def scrub(text: str, allow: list[str] | None = None) -> str:
    return Scrubber(allow=allow or []).value(text)


# ---- text -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("secret", "kind"), KEYS.items(), ids=KEYS.values())
def test_each_provider_key_becomes_its_typed_placeholder(secret, kind):
    scrubber = Scrubber()
    out = scrubber.value(f"run with key {secret} now")
    assert out == f"run with key [REDACTED:{kind}] now"
    assert scrubber.counts == {kind: 1}


def test_pem_block_url_password_env_and_keyword_rules():
    text = f'key:\n{PEM}\ndone\nurl={DB_URL}\n{ENV_BLOCK}password = "sup3rSecret!"\n'
    scrubber = Scrubber()
    out = scrubber.value(text)
    assert out == (
        "key:\n[REDACTED:private-key]\ndone\n"
        "url=postgres://app_user:[REDACTED:password]@db.internal:5432/prod\n"
        "DJANGO_SECRET_KEY=[REDACTED:secret]\n"
        "REDIS_PASSWORD='[REDACTED:password]'\n"
        "export AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]\n"
        "DEBUG=true\nPORT=8000\n"
        'password = "[REDACTED:password]"\n'
    )
    assert scrubber.counts == {"private-key": 1, "password": 3, "secret": 1, "aws-secret-key": 1}


def test_a_pem_block_cut_short_is_still_redacted():
    out = scrub(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}")
    assert out.strip() == "[REDACTED:private-key]"


def test_allow_list_literals_and_regexes_survive():
    text = f"{ALLOWED_LITERAL} {ALLOWED_BY_REGEX} {AWS}"
    assert scrub(text, ALLOW) == f"{ALLOWED_LITERAL} {ALLOWED_BY_REGEX} [REDACTED:aws-access-key]"
    with pytest.raises(ValueError, match="not a valid regex"):
        ScrubSettings(allow=["re:("])


def test_placeholder_types_are_documented():
    assert set(KEYS.values()) | {"private-key", "password", "secret"} <= set(detector_types())


ORDINARY = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: Dev <dev@example.com>",
    "trace 123e4567-e89b-12d3-a456-426614174000 request 9b2c1d7e-3f4a-4b5c-8d6e-7f8091a2b3c4",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    'integrity "sha512-9A2w5wQYqAbH5XqNmc3K1E1gZ8fG9hJZl0oq3vXbD7uJt1yN4rS2pL6mK8cW0eR4tY7uI=="',
    'api_key = os.environ["OPENAI_API_KEY"]\npassword = getpass.getpass()\n',
    "token_count = len(tokens)\nheaders = {'Authorization': f'Bearer {token}'}\n",
    "const apiKey = process.env.API_KEY;\nconst secret = await vault.read(path);\n",
    "api_key: ${OPENAI_API_KEY}\nDATABASE_URL=postgres://localhost:5432/app\nOPENAI_API_KEY=\n",
    "class Auth(enum.Enum):\n    API_KEY = 'api_key'\n    PASSWORD = 'password'\n",
    "git clone git@github.com:org/repo.git && cd repo && git checkout -b feature/scrub",
    "image: postgres:16@sha256:4b1c3b0f6c7d2e9a8f5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f",
    "def check_password(user, password):\n    if not password:\n        return False\n    pass\n",
    "MAX_TOKENS=4096\nSSH_KEY_PATH=/home/dev/.ssh/id_ed25519\nPUBLIC_KEY_FILE=key.pub\n",
    'resp = requests.get("https://api.example.com/v1/items?page=2", timeout=30)\n',
    "ip 10.0.0.12 port 8080 pid 4242 at 2024-05-01T12:00:00Z",
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_no_false_positives_on_ordinary_code_hashes_and_ids(text):
    assert scrub(text) == text


SEPARATORS = st.sampled_from([" ", "\n", "\t", '"', "'", "=", ": ", "(", ", ", "`", "\n\n"])
SURROUNDING = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=200)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    secret=st.sampled_from([*KEYS, PEM, DB_URL]),
    before=SURROUNDING,
    after=SURROUNDING,
    left=SEPARATORS,
    right=SEPARATORS,
)
def test_random_surroundings_never_leak_a_planted_key(secret, before, after, left, right):
    text = before + left + secret + right + after
    core = DB_PASSWORD if secret == DB_URL else PEM_BODY.split("\n")[1] if secret == PEM else secret
    out = scrub(text)
    assert core not in out
    assert scrub(out) == out  # idempotent: placeholders are never redacted again
    wrapped = scrub(json.dumps({"cmd": text, "n": 1}))
    assert core not in wrapped and json.loads(wrapped)["n"] == 1


# ---- traces and datasets ----------------------------------------------------------------------


def planted_trace(trace_id: str) -> Trace:
    write_args = json.dumps({"file_path": "deploy/key.pem", "content": PEM + "\n"})
    curl_args = json.dumps({"command": f"curl -H 'Authorization: Bearer {GITHUB}' {DB_URL}"})
    sub = Trace(id=f"{trace_id}-sub", messages=[Message(role="user", content=f"use {STRIPE}")])
    return Trace(
        id=trace_id,
        system_prompt=f"You are a deploy bot. AWS key: {AWS}",
        messages=[
            Message(role="user", content="Show me .env and deploy"),
            Message(
                role="assistant",
                content=f"Using {ANTHROPIC} to call the API.",
                reasoning=f"The OpenAI key is {OPENAI}; do not print it.",
                tool_calls=[
                    ToolCall(id="c1", name="Bash", arguments=json.dumps({"command": "cat .env"})),
                    ToolCall(id="c2", name="Write", arguments=write_args),
                    ToolCall(id="c3", name="Bash", arguments=curl_args),
                ],
            ),
            Message(role="tool", tool_call_id="c1", name="Bash", content=ENV_BLOCK),
            Message(role="tool", tool_call_id="c2", name="Write", content="wrote deploy/key.pem"),
            Message(role="tool", tool_call_id="c3", name="Bash", content=f"posted via {SLACK}"),
            Message(role="assistant", content=f"Allowed example: {ALLOWED_LITERAL}"),
        ],
        extra={"session_token": JWT, "notes": [f"hf {HF}", {"google": GOOGLE}]},
        subagents=[sub],
    )


def test_trace_column_is_scrubbed_and_stays_a_valid_trace():
    rows = pd.DataFrame([trace_to_row(planted_trace("t1")), {"trace_id": "clean", "trace": None}])
    rows["notes"] = [f"{NVIDIA} and {GITLAB}", "nothing to see"]
    out, report = scrub_dataset(rows, ScrubSettings(allow=ALLOW))
    text = out.to_json()
    for secret in [*PLANTED, PEM_BODY.split("\n")[0]]:
        assert secret not in text
    trace = trace_from_row(out.iloc[0])
    assert trace.messages[1].content == "Using [REDACTED:anthropic-api-key] to call the API."
    args = trace.messages[1].tool_calls[1].arguments_dict()
    assert args == {"file_path": "deploy/key.pem", "content": "[REDACTED:private-key]\n"}
    assert "postgres://app_user:[REDACTED:password]@db.internal" in (
        trace.messages[1].tool_calls[2].arguments
    )
    assert trace.extra["session_token"] == "[REDACTED:jwt]"
    assert trace.subagents[0].messages[0].content == "use [REDACTED:stripe-key]"
    assert ALLOWED_LITERAL in trace.messages[-1].content
    assert report["rows_touched"] == 1 and report["enabled"] is True
    assert report["redacted"]["private-key"] == 1 and report["redacted"]["password"] >= 2
    pd.testing.assert_series_equal(out.iloc[1], rows.iloc[1])  # clean rows are left as they were
    off, report = scrub_dataset(rows, ScrubSettings(enabled=False))
    assert off is rows and report == {"enabled": False}


# ---- a real run ---------------------------------------------------------------------------------


class PlantedSource(Source):
    """Transcript rows full of planted secrets: a Trace plus plain text columns."""

    output_format = "traces"

    def open(self, options, run):
        for i in range(2):
            row = trace_to_row(planted_trace(f"t{i}"))
            row["notes"] = f"keys {AWS} {GITHUB} {NVIDIA} {GITLAB} {HF} {GOOGLE} {JWT}"
            row["env_file"] = ENV_BLOCK + f"DATABASE_URL={DB_URL}\n"
            row["fixture"] = f"{ALLOWED_LITERAL} {ALLOWED_BY_REGEX}"
            yield row


class PlantedPlugin:
    @hookimpl
    def register_sources(self, register):
        register("planted", PlantedSource())


SINKS = ["parquet", "nemo-jsonl", "hf-hub"]
READABLE_OPTIONS = {"compression": "none", "file_format": "jsonl"}  # where a sink has them


def every_output_text(run_dir: Path) -> str:
    """Raw bytes of every file (decoded leniently) plus the decoded values of Parquet files."""
    parts = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        parts.append(path.read_bytes().decode("utf-8", errors="replace"))
        if path.suffix == ".parquet":
            parts.append(pq.read_table(path).to_pandas().to_json())
    return "\n".join(parts)


@pytest.mark.parametrize("sink", SINKS)
def test_run_writes_no_planted_secret_through_any_sink(
    bashgym_cli, bashgym_env, bashgym_host, register_plugin, sink
):
    if sink not in bashgym_host.registry.names("sinks"):
        pytest.skip(f"sink {sink!r} is not registered (its plugin is not installed)")
    register_plugin(PlantedPlugin(), "planted-plugin")
    (bashgym_env.workdir / "bashgym.toml").write_text(
        "[scrub]\nallow = " + json.dumps(ALLOW) + "\n"
    )
    fields = bashgym_host.registry.get("sinks", sink).obj.Options.model_fields
    sets = [f"sink.{k}={v}" for k, v in READABLE_OPTIONS.items() if k in fields]
    out = bashgym_env.workdir / f"run-{sink}"
    args = ["run", "-s", "planted", "-k", sink, "--out", out]
    result = bashgym_cli(*args, *[a for s in sets for a in ("--set", s)])
    assert result.exit_code == 0, result.output
    written = every_output_text(out)
    leaked = [s for s in [*PLANTED, PEM_BODY.split("\n")[0]] if s in written]
    assert not leaked, f"secrets survived in {sink} output: {leaked}"
    assert ALLOWED_LITERAL in written
    # In the messages, so in every training shape (extra and plain columns may be left out).
    for kind in ("aws-access-key", "github-token", "private-key", "password", "slack-token"):
        assert f"[REDACTED:{kind}]" in written, kind
    assert PLACEHOLDER_RE.search(written)
    run = json.loads((out / "run.json").read_text())
    scrub_report = run["scrub"]
    assert scrub_report["rows_touched"] == 2
    redacted = scrub_report["redacted"]
    for kind in ("aws-access-key", "github-token", "slack-token", "stripe-key", "openai-api-key"):
        assert redacted[kind] >= 2, kind
    assert redacted["private-key"] == 2 and redacted["jwt"] >= 4
    assert run["timings_s"]["source"] > 0  # scrubbed as the rows streamed from the source
    if sink == "parquet":
        table = pq.read_table(out / "data.parquet").to_pandas()
        assert set(table["fixture"]) == {f"{ALLOWED_LITERAL} {ALLOWED_BY_REGEX}"}
        assert (
            "postgres://app_user:[REDACTED:password]@db.internal:5432/prod"
            in (table["env_file"][0])
        )
        assert "[REDACTED:jwt]" in table["notes"][0]
        trace = trace_from_row(table.iloc[0])
        assert trace.system_prompt == "You are a deploy bot. AWS key: [REDACTED:aws-access-key]"


def test_json_keys_that_name_secrets_and_nested_list_cells():
    assert scrub('{"access_token": "a8f9Qx2LmZ71", "key": "ArrowUp", "max_tokens": 512}') == (
        '{"access_token": "[REDACTED:secret]", "key": "ArrowUp", "max_tokens": 512}'
    )
    frame = pd.DataFrame({"turns": [[f"use {GITHUB}", "ok"], ["fine", "also fine"]], "n": [1, 2]})
    out, report = scrub_dataset(frame, ScrubSettings())
    assert out["turns"][0] == ["use [REDACTED:github-token]", "ok"]
    assert out["turns"][1] is frame["turns"][1] and report["rows_touched"] == 1


def test_documentation_placeholders_are_not_secrets():
    text = "Account SID (ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx) and AKIAXXXXXXXXXXXXXXXX"
    assert scrub(text) == text


@pytest.mark.parametrize("dtype", ["str", "string[pyarrow]", "string[python]", object, "category"])
def test_frame_keeps_each_string_dtype_and_its_missing_cells(dtype):
    """Arrow-backed columns get only their changed cells replaced (the rest stays Arrow data);
    every dtype comes back as it was (categories as objects), missing cells still missing."""
    cells = ["plain text", f"export GITHUB_TOKEN={GITHUB}", None, "nothing here either"]
    dataset = pd.DataFrame({"text": pd.Series(cells, dtype=dtype), "n": [1, 2, 3, 4]})
    out, touched = Scrubber().frame(dataset)
    assert touched == 1
    expected = object if dtype == "category" else dataset["text"].dtype
    assert out["text"].dtype == expected
    assert out["text"][1] == "export GITHUB_TOKEN=[REDACTED:github-token]"
    assert [out["text"][i] for i in (0, 3)] == [cells[0], cells[3]]
    assert pd.isna(out["text"][2]) and out["n"].tolist() == [1, 2, 3, 4]
    assert dataset["text"][1] == cells[1]  # the input frame is not changed


def test_arrow_column_scanned_on_its_own_utf8_gives_the_same_output():
    """Arrow string cells are scanned on the column's UTF-8 bytes, not encoded again: the
    output (and every position in it, non-ASCII text before the secret included) is the same
    as for the same cells in an object column."""
    cells = [
        json.dumps({"content": f"héllo 🙂 ünïcode, then GITHUB_TOKEN={GITHUB} and {AWS}"}),
        f"naïve text 🙂 password: Zq8!wP3#vL then {SLACK}",
        "ascii only, no secret here at all",
        None,
    ]
    outs = {}
    for dtype in ("str", object):
        frame = pd.DataFrame({"c": pd.Series(cells, dtype=dtype)})
        outs[dtype] = Scrubber().frame(frame)[0]["c"].tolist()
    assert outs["str"][:3] == outs[object][:3]
    assert GITHUB not in outs["str"][0] and AWS not in outs["str"][0] and "🙂" in outs["str"][0]
    assert SLACK not in outs["str"][1] and "Zq8!wP3#vL" not in outs["str"][1]
