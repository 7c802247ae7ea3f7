"""DataDesigner's template environments compile a prompt once, then render the compiled
template for every row: the same text as compiling it each time."""

from __future__ import annotations

from bashgym_runners_datadesigner import templates


def test_a_prompt_is_compiled_once_per_environment_and_renders_the_same():
    templates.install()
    from data_designer.engine.processing.ginja.environment import (
        UserTemplateSandboxEnvironment,
    )

    prompt = "Explain {{ topic }} in two sentences."
    env = UserTemplateSandboxEnvironment(allowed_references=["topic"])
    first = env.render_template(prompt, {"topic": "sorting"}, skip_template_validation=True)
    second = env.render_template(prompt, {"topic": "hashing"}, skip_template_validation=True)
    assert (first, second) == (
        "Explain sorting in two sentences.",
        "Explain hashing in two sentences.",
    )
    assert env.from_string(prompt) is env.from_string(prompt)  # compiled once
    other = UserTemplateSandboxEnvironment(allowed_references=["topic"])
    assert other.from_string(prompt) is not env.from_string(prompt)  # per environment
    assert env.from_string("{{ topic }}!").render(topic="x") == "x!"
