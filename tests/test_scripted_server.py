"""The scripted model server, driven by the real openai, anthropic and data_designer clients."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
import time
from enum import StrEnum

# DataDesigner reads these at import time (shared/reference/datadesigner.md).
os.environ.setdefault("NEMO_TELEMETRY_ENABLED", "false")
if "DATA_DESIGNER_HOME" not in os.environ:
    # a home of its own, removed when this (xdist worker) process ends: made at import, it was
    # left in /tmp by every worker of every run before
    _DD_HOME = tempfile.mkdtemp(prefix="bashgym-dd-home-")
    os.environ["DATA_DESIGNER_HOME"] = _DD_HOME
    atexit.register(shutil.rmtree, _DD_HOME, ignore_errors=True)
os.environ.setdefault("SCRIPTED_KEY", "scripted-secret")

import anthropic
import jsonschema
import openai
import pytest
from bashgym_testing import Fault, Reply, ScriptedModelServer, ToolUse
from bashgym_testing.server import schema_instance
from pydantic import BaseModel, Field

USER = [{"role": "user", "content": "Say hello"}]


@pytest.fixture
def server():
    with ScriptedModelServer() as s:
        yield s


@pytest.fixture
def oai(server):
    return openai.OpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)


@pytest.fixture
def claude(server):
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url, api_key="ant-test", max_retries=0
    )


# -- OpenAI ------------------------------------------------------------------------------------


def test_openai_plain_completion_and_fifo(server, oai):
    server.script(Reply("first"), "second")
    a = oai.chat.completions.create(model="m1", messages=USER)
    b = oai.chat.completions.create(model="m1", messages=USER)
    assert [a.choices[0].message.content, b.choices[0].message.content] == ["first", "second"]
    assert a.choices[0].finish_reason == "stop"
    assert a.model == "m1"
    assert a.usage.completion_tokens == 1 and a.usage.prompt_tokens == 2
    c = oai.chat.completions.create(model="m1", messages=USER)  # script empty: default echo
    assert c.choices[0].message.content == "Scripted answer to: Say hello"


def test_openai_tool_call(server, oai):
    server.script(Reply(tool_calls=[ToolUse("Bash", {"command": "ls -la"}, id="call_fixed")]))
    r = oai.chat.completions.create(
        model="m", messages=USER, tools=[{"type": "function", "function": {"name": "Bash"}}]
    )
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert (call.id, call.function.name, json.loads(call.function.arguments)) == (
        "call_fixed",
        "Bash",
        {"command": "ls -la"},
    )


def test_openai_streaming_text_and_tool_calls(server, oai):
    server.script(
        Reply("one two three four five six seven"),
        Reply(
            "Running it.",
            tool_calls=[ToolUse("Bash", {"command": "echo hi"}), ToolUse("Read", {"path": "/a"})],
        ),
    )
    chunks = list(oai.chat.completions.create(model="m", messages=USER, stream=True))
    assert len(chunks) > 3 and all(c.object == "chat.completion.chunk" for c in chunks)
    assert (
        "".join(c.choices[0].delta.content or "" for c in chunks)
        == "one two three four five six seven"
    )

    with oai.chat.completions.stream(model="m", messages=USER) as stream:
        final = stream.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert message.content == "Running it."
    assert [(t.function.name, json.loads(t.function.arguments)) for t in message.tool_calls] == [
        ("Bash", {"command": "echo hi"}),
        ("Read", {"path": "/a"}),
    ]
    assert all(t.id.startswith("call_") for t in message.tool_calls)


def test_openai_stream_usage_chunk(server, oai):
    server.script(Reply("a b c", usage={"input_tokens": 11, "output_tokens": 7}))
    chunks = list(
        oai.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
    )
    assert chunks[-1].usage.prompt_tokens == 11 and chunks[-1].usage.completion_tokens == 7


def test_openai_error_statuses(server, oai):
    server.inject(Fault.status(429, retry_after=2))
    server.script(
        Fault.status(500),
        Fault.status(401),
        Fault.status(404),
        Fault.status(503, body={"custom": True}),
        "ok",
    )
    with pytest.raises(openai.RateLimitError) as rate:
        oai.chat.completions.create(model="m", messages=USER)
    assert rate.value.response.headers["retry-after"] == "2"
    assert rate.value.body["code"] == "rate_limit_exceeded"
    with pytest.raises(openai.InternalServerError):
        oai.chat.completions.create(model="m", messages=USER)
    with pytest.raises(openai.AuthenticationError):
        oai.chat.completions.create(model="m", messages=USER)
    with pytest.raises(openai.NotFoundError) as missing:
        oai.chat.completions.create(model="gpt-nope", messages=USER)
    assert "gpt-nope" in str(missing.value)
    with pytest.raises(openai.InternalServerError) as custom:
        oai.chat.completions.create(model="m", messages=USER)
    assert custom.value.status_code == 503 and custom.value.body == {"custom": True}
    assert oai.chat.completions.create(model="m", messages=USER).choices[0].message.content == "ok"


def test_inject_goes_before_script(server, oai):
    server.script("scripted")
    server.inject(Fault.status(500), times=2)
    assert server.pending == 3
    for _ in range(2):
        with pytest.raises(openai.InternalServerError):
            oai.chat.completions.create(model="m", messages=USER)
    assert (
        oai.chat.completions.create(model="m", messages=USER).choices[0].message.content
        == "scripted"
    )


def test_openai_malformed_and_disconnect(server, oai):
    server.script(Fault.malformed(), Fault.malformed(), Fault.disconnect(), "after")
    with pytest.raises(ValueError):  # json.JSONDecodeError from the client's response.json()
        oai.chat.completions.create(model="m", messages=USER)
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces a broken SSE event as a JSON error
        list(oai.chat.completions.create(model="m", messages=USER, stream=True))
    with pytest.raises(openai.APIConnectionError):
        oai.chat.completions.create(model="m", messages=USER)
    assert (
        oai.chat.completions.create(model="m", messages=USER).choices[0].message.content == "after"
    )


def test_openai_timeout_and_fast_stop():
    server = ScriptedModelServer().start()
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0, timeout=0.3)
    server.inject(Fault.timeout(30))
    t0 = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        client.chat.completions.create(model="m", messages=USER)
    assert time.monotonic() - t0 < 2
    t0 = time.monotonic()
    server.stop()  # must not wait for the held connection
    assert time.monotonic() - t0 < 2


def test_latency_applies_and_does_not_serialize(server, oai):
    server.latency = 0.2
    t0 = time.monotonic()
    oai.chat.completions.create(model="m", messages=USER)
    assert time.monotonic() - t0 >= 0.2

    server.script(Reply("slow", delay=0.3))
    t0 = time.monotonic()
    assert (
        oai.chat.completions.create(model="m", messages=USER).choices[0].message.content == "slow"
    )
    assert time.monotonic() - t0 >= 0.5

    results: list[str] = []
    threads = [
        threading.Thread(
            target=lambda: results.append(oai.chat.completions.create(model="m", messages=USER).id)
        )
        for _ in range(16)
    ]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    assert len(results) == 16
    assert elapsed < 16 * 0.2 / 3, f"16 parallel requests at 0.2 s took {elapsed:.2f} s"


def test_callable_turns_and_rules(server, oai):
    server.script(lambda req: Reply(f"you said {req.last_user_text!r} to {req.model}"))
    r = oai.chat.completions.create(model="m9", messages=USER)
    assert r.choices[0].message.content == "you said 'Say hello' to m9"

    server.add_rule(r"weather", Reply("sunny"))
    server.add_rule(lambda req: req.model == "broken", lambda req: Fault.status(500))
    ask = [{"role": "user", "content": "What is the weather?"}]
    assert (
        oai.chat.completions.create(model="m", messages=ask).choices[0].message.content == "sunny"
    )
    with pytest.raises(openai.InternalServerError):
        oai.chat.completions.create(model="broken", messages=USER)

    server.script(lambda req: 1 / 0)
    with pytest.raises(openai.InternalServerError):
        oai.chat.completions.create(model="m", messages=USER)
    assert isinstance(server.errors[0], ZeroDivisionError)

    server.reset()
    assert server.requests == [] and server.errors == [] and server.pending == 0
    assert (
        "Scripted answer"
        in oai.chat.completions.create(model="m", messages=ask).choices[0].message.content
    )


# -- Anthropic ---------------------------------------------------------------------------------


def test_anthropic_plain_and_tool_use(server, claude):
    server.script(
        Reply("Hello!"), Reply("Let me look.", tool_calls=[ToolUse("Bash", {"command": "ls"})])
    )
    m = claude.messages.create(model="claude-x", max_tokens=64, messages=USER)
    assert m.content[0].text == "Hello!" and m.stop_reason == "end_turn" and m.model == "claude-x"
    assert m.usage.input_tokens == 2 and m.usage.output_tokens == 1

    m = claude.messages.create(model="claude-x", max_tokens=64, messages=USER)
    assert m.stop_reason == "tool_use"
    text, tool = m.content
    assert text.text == "Let me look."
    assert (tool.type, tool.name, tool.input) == ("tool_use", "Bash", {"command": "ls"})
    assert tool.id.startswith("toolu_")


def test_anthropic_streaming(server, claude):
    server.script(
        Reply(
            "Checking the files now.",
            tool_calls=[ToolUse("Write", {"path": "a.py", "content": "x = 1\n"}, id="toolu_1")],
        )
    )
    with claude.messages.stream(model="claude-x", max_tokens=64, messages=USER) as stream:
        types = [event.type for event in stream]
        final = stream.get_final_message()
    assert "content_block_delta" in types and "input_json" in types
    assert final.stop_reason == "tool_use"
    assert final.content[0].text == "Checking the files now."
    assert (final.content[1].id, final.content[1].input) == (
        "toolu_1",
        {"path": "a.py", "content": "x = 1\n"},
    )
    assert final.usage.output_tokens > 1


def test_anthropic_rate_limit_and_count_tokens(server, claude):
    server.inject(Fault.status(429, retry_after=1))
    with pytest.raises(anthropic.RateLimitError) as rate:
        claude.messages.create(model="claude-x", max_tokens=8, messages=USER)
    assert rate.value.body["error"]["type"] == "rate_limit_error"
    counted = claude.messages.count_tokens(
        model="claude-x", messages=[{"role": "user", "content": "one two three"}]
    )
    assert counted.input_tokens == 3
    assert server.pending == 0


def test_beta_query_string_is_served(server):
    import httpx

    server.script("beta ok")
    body = {"model": "claude-x", "max_tokens": 8, "stream": True, "messages": USER}
    with httpx.stream("POST", server.base_url + "/v1/messages?beta=true", json=body) as response:
        raw = response.read().decode()
    assert response.status_code == 200
    events = [line.split(": ", 1)[1] for line in raw.splitlines() if line.startswith("event: ")]
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert '"text": "beta ok"' in raw.replace('"text_delta", "text"', '"text"')
    assert server.requests[-1].query == {"beta": "true"}


# -- Recording ---------------------------------------------------------------------------------


def test_requests_are_recorded(server, oai, claude):
    oai.chat.completions.create(
        model="gpt-x", messages=[{"role": "system", "content": "Be brief."}, *USER]
    )
    claude.messages.create(model="claude-x", max_tokens=8, system="Sys.", messages=USER)
    oai.models.list()
    first, second, third = server.requests
    assert (first.method, first.path, first.api, first.model) == (
        "POST",
        "/v1/chat/completions",
        "openai",
        "gpt-x",
    )
    assert first.headers["authorization"] == "Bearer sk-test"
    assert (
        first.messages[-1] == USER[0]
        and first.last_user_text == "Say hello"
        and first.system_text == "Be brief."
    )
    assert (second.path, second.api, second.model, second.system_text) == (
        "/v1/messages",
        "anthropic",
        "claude-x",
        "Sys.",
    )
    # anthropic 2.x sends "Authorization: Bearer"; DataDesigner and older SDKs send x-api-key.
    assert second.api_key == "ant-test" and "anthropic-version" in second.headers
    assert first.api_key == "sk-test"
    assert (third.method, third.path, third.api, third.body) == ("GET", "/v1/models", "other", None)
    assert second.timestamp >= first.timestamp
    assert [r.api for r in server.completions] == ["openai", "anthropic"]


# -- JSON Schema instances ---------------------------------------------------------------------


class Color(StrEnum):
    RED = "red"
    BLUE = "blue"


class Step(BaseModel):
    command: str = Field(min_length=12)
    exit_code: int = Field(ge=0, le=255)
    tags: list[Color] = Field(min_length=2)


class Trajectory(BaseModel):
    task: str
    steps: list[Step] = Field(min_length=1, max_length=3)
    rating: int | None = None
    kind: Color = Color.BLUE
    ratio: float = Field(gt=0, lt=1)
    meta: dict[str, list[int]] = {}


SCHEMAS = [
    {
        "type": "object",
        "properties": {"a": {"type": "string", "format": "date-time"}, "b": {"type": "null"}},
        "required": ["a", "b"],
    },
    {
        "type": "array",
        "items": {"type": "integer", "minimum": 3, "maximum": 9},
        "minItems": 3,
        "uniqueItems": True,
    },
    {"type": "array", "items": {"enum": [1, 2]}, "minItems": 2, "uniqueItems": True},
    {"type": "string", "minLength": 20, "maxLength": 25},
    {"type": "number", "exclusiveMinimum": 5, "exclusiveMaximum": 5.5},
    {"type": "integer", "minimum": 7, "multipleOf": 5},
    {"enum": [5, 4, 3, 2, 1]},
    {"const": {"x": 1}},
    {"type": "boolean"},
    {"anyOf": [{"type": "null"}, {"type": "string", "format": "email"}]},
    {"oneOf": [{"type": "string", "const": "yes"}, {"type": "integer"}]},
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ],
        "unevaluatedProperties": False,
    },
    {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "required": ["next"],
            }
        },
        "$ref": "#/$defs/Node",
    },
    {
        "definitions": {
            "P": {
                "type": "object",
                "required": ["p"],
                "properties": {"p": {"type": ["integer", "null"]}},
            }
        },
        "type": "array",
        "prefixItems": [{"$ref": "#/definitions/P"}, {"type": "string"}],
        "minItems": 2,
    },
    {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
    Trajectory.model_json_schema(),
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
def test_schema_instance_validates(schema):
    instance = schema_instance(schema)
    jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker()
    ).validate(instance)
    assert schema_instance(schema) == instance  # deterministic


def test_schema_instance_for_pydantic_model_is_populated():
    t = Trajectory.model_validate(schema_instance(Trajectory.model_json_schema()))
    assert t.steps and len(t.steps[0].tags) >= 2 and len(set(t.steps[0].tags)) >= 1
    assert 0 <= t.steps[0].exit_code <= 255 and len(t.steps[0].command) >= 12
    assert 0 < t.ratio < 1 and t.rating is not None


@pytest.mark.parametrize("kind", ["structured", "judge", "python", "bash", "sql:postgres"])
def test_datadesigner_recipe_prompts_get_parseable_answers(server, oai, kind):
    """The exact prompts DataDesigner's response recipes build, parsed by those recipes."""
    import data_designer.config as dd
    from data_designer.engine.column_generators.utils.judge_score_factory import (
        create_judge_response_model,
        create_judge_structured_output_model,
    )
    from data_designer.engine.models.recipes.response_recipes import (
        CodeResponseRecipe,
        PydanticResponseRecipe,
    )

    if kind == "structured":
        recipe = PydanticResponseRecipe(data_type=Trajectory)
    elif kind == "judge":
        score = dd.Score(name="correctness", description="Right?", options={4: "good", 2: "bad"})
        recipe = PydanticResponseRecipe(
            data_type=create_judge_structured_output_model([create_judge_response_model(score)])
        )
    else:
        recipe = CodeResponseRecipe(syntax=kind)
    prompt = recipe.apply_recipe_to_user_prompt("Do the task.")
    text = (
        oai.chat.completions.create(model="m", messages=[{"role": "user", "content": prompt}])
        .choices[0]
        .message.content
    )
    parsed = recipe.parse(text)
    if kind == "structured":
        assert text.startswith("```json\n") and parsed.steps
    elif kind == "judge":
        assert parsed.correctness.score == 4 and parsed.correctness.reasoning
    else:
        assert (
            parsed
            == {
                "python": "def solution():\n    return 42",
                "bash": "echo hello",
                "sql:postgres": "SELECT 1;",
            }[kind]
        )


# -- DataDesigner end to end -------------------------------------------------------------------


class Verdict(BaseModel):
    label: Color
    confidence: float = Field(ge=0, le=1)
    notes: list[str]


def _builder(dd, provider: str):
    params = dd.ChatCompletionInferenceParams(max_parallel_requests=4, timeout=10, max_tokens=256)
    return (
        dd.DataDesignerConfigBuilder(
            model_configs=[
                dd.ModelConfig(
                    alias="m", model="scripted", provider=provider, inference_parameters=params
                )
            ]
        )
        .add_column(
            dd.SamplerColumnConfig(
                name="topic",
                sampler_type="category",
                params=dd.CategorySamplerParams(values=["git", "sed"]),
            )
        )
        .add_column(
            dd.LLMTextColumnConfig(
                name="question", prompt="Ask a question about {{ topic }}.", model_alias="m"
            )
        )
    )


def _designer(tmp_path, providers):
    import data_designer.config as dd
    from data_designer.interface import DataDesigner

    designer = DataDesigner(artifact_path=tmp_path / "dd", model_providers=providers)
    designer.set_run_config(dd.RunConfig(otel_metrics_port=None, progress_interval=60))
    return designer


def test_datadesigner_all_llm_column_kinds(server, tmp_path):
    import data_designer.config as dd

    builder = _builder(dd, "local")
    builder.add_column(
        dd.LLMStructuredColumnConfig(
            name="verdict",
            prompt="Classify {{ question }}.",
            model_alias="m",
            output_format=Verdict,
        )
    )
    builder.add_column(
        dd.LLMCodeColumnConfig(
            name="solution",
            prompt="Solve {{ question }}.",
            model_alias="m",
            code_lang=dd.CodeLang.PYTHON,
        )
    )
    builder.add_column(
        dd.LLMCodeColumnConfig(
            name="query",
            prompt="Query for {{ topic }}.",
            model_alias="m",
            code_lang=dd.CodeLang.SQL_POSTGRES,
        )
    )
    builder.add_column(
        dd.LLMJudgeColumnConfig(
            name="quality",
            prompt="Judge {{ solution }}.",
            model_alias="m",
            scores=[
                dd.Score(
                    name="correctness", description="Is it right?", options={5: "right", 1: "wrong"}
                )
            ],
        )
    )
    builder.add_column(
        dd.ExpressionColumnConfig(
            name="good", expr="{{ quality.correctness.score >= 3 }}", dtype="bool"
        )
    )
    provider = dd.ModelProvider(
        name="local",
        endpoint=server.openai_base_url,
        provider_type="openai",
        api_key="SCRIPTED_KEY",
    )
    df = _designer(tmp_path, [provider]).preview(builder, num_records=4).dataset

    assert len(df) == 4
    for row in df.to_dict("records"):
        assert row["question"].startswith("Scripted answer to: Ask a question about")
        assert row["topic"] in row["question"]
        Verdict.model_validate(row["verdict"])
        assert row["solution"] == "def solution():\n    return 42"
        compile(row["solution"], "solution", "exec")
        assert row["query"] == "SELECT 1;"
        assert (
            row["quality"]["correctness"]["score"] == 5
            and row["quality"]["correctness"]["reasoning"]
        )
        assert row["good"] in (True, "True")
    posts = server.completions
    assert all(r.headers["authorization"] == "Bearer scripted-secret" for r in posts)
    assert any("<response_schema>" in r.last_user_text for r in posts)
    assert any("Your response must be code written in sql." in r.last_user_text for r in posts)


def test_datadesigner_anthropic_provider(server, tmp_path):
    import data_designer.config as dd

    server.add_rule(
        "Ask a question", lambda req: Reply(f"Q via {req.api}: {req.last_user_text[-4:]}")
    )
    provider = dd.ModelProvider(
        name="claude",
        endpoint=server.anthropic_base_url,
        provider_type="anthropic",
        api_key="SCRIPTED_KEY",
    )
    df = _designer(tmp_path, [provider]).preview(_builder(dd, "claude"), num_records=3).dataset
    assert len(df) == 3
    assert all(q.startswith("Q via anthropic: ") for q in df["question"])
    posts = [r for r in server.completions if "Ask a question" in r.last_user_text]
    assert posts and all(
        r.path == "/v1/messages" and r.headers["x-api-key"] == "scripted-secret" for r in posts
    )
