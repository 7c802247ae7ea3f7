"""The built-in rubrics: what an expert reviewer would check, level by level.

Every level says what a response earning it looks like, not just "good" / "bad": LLM judges
anchor on the level descriptions, and vague anchors make scores drift to 4 for everything.
The levels also say what NOT to reward (length, confident tone, claims without evidence),
because those are the judge biases that let bad rows into training data.
"""

from __future__ import annotations

from bashgym.contracts import InputError
from bashgym_designer.rubrics.rubric import Criterion, Rubric

_EVIDENCE = (
    "Judge only what the response shows. Give no credit for claims it does not back up "
    '("tests pass", "this works") and do not reward length, confidence or polish. '
    "Score each criterion on its own: a flaw counted under one criterion does not lower "
    "another unless it also fails that one."
)

CODING_SOLUTION = Rubric(
    name="coding-solution",
    description="A coding task and the solution an agent or model produced for it.",
    instructions=(
        "You are a senior software engineer reviewing a solution to a programming task, as "
        "you would before approving it for merge. The response may be code, a patch, or an "
        "agent's work log with tool calls (commands run, files read and edited) and their "
        "results. Trace the logic against the task's requirements and edge cases; read any "
        "tool output the response includes rather than trusting its summary. " + _EVIDENCE
    ),
    criteria=[
        Criterion(
            name="correctness",
            description=(
                "Does the solution do what the task asks, for normal inputs and the edge cases "
                "the task implies (empty input, boundaries, errors), without breaking existing "
                "behaviour? Judge the code itself, and any test or run output shown."
            ),
            options={
                5: "Correct for all inputs the task implies, edge cases included; would pass a "
                "careful reviewer's tests; no regressions or unsafe side effects.",
                4: "Correct for the main cases; one minor edge case or small robustness issue "
                "that does not affect typical use.",
                3: "The core logic is right, but a realistic edge case is wrong or an error path "
                "is unhandled; usable after a small fix.",
                2: "Works only for some inputs, or has a bug in the main path (wrong condition, "
                "off-by-one, wrong API) that makes it unreliable.",
                1: "Wrong, does not run (syntax or import errors), solves a different problem, "
                "or is missing.",
            },
        ),
        Criterion(
            name="tool_usage",
            description=(
                "Were tools and commands used well: inspecting the relevant code before "
                "editing, running tests or the program to verify, choosing fitting commands, "
                "reacting to errors instead of repeating them, and avoiding destructive or "
                "pointless actions? A response with no tool calls is judged on whether the "
                "task needed none and the answer is self-evidently checkable."
            ),
            options={
                5: "Purposeful and efficient: read what it needed, made targeted edits, verified "
                "the result by running tests or the code, and acted on what the output said. "
                "(Or: no tools used and none were needed.)",
                4: "Sound tool use with a little waste (a redundant read or command), or "
                "verification that is lighter than ideal.",
                3: "Got there, but with notable waste or trial-and-error, or edits made without "
                "reading the surrounding code, or verification skipped where it was easy.",
                2: "Poor: repeated failing commands without changing approach, ignored error "
                "output, edited blindly, or claimed success without running anything.",
                1: "Harmful or absent where essential: destructive commands (deleting files, "
                "force-pushing, disabling tests), fabricated tool results, or no inspection or "
                "verification at all on a task that plainly required it.",
            },
        ),
        Criterion(
            name="completeness",
            description=(
                "Does the solution cover every requirement of the task (each requested "
                "feature, file, test or explanation), with nothing left as a TODO, stub or "
                "placeholder?"
            ),
            options={
                5: "Every requirement is met, including the secondary ones (tests, docs, error "
                "messages the task asked for); nothing stubbed.",
                4: "All main requirements met; one minor secondary item missing or thin.",
                3: "The main requirement is met but a stated secondary requirement is missing, "
                "or part of the work is left to the user.",
                2: "Only part of the main requirement is done; placeholders, TODOs or "
                "'implement this' gaps remain in the core.",
                1: "Little or none of what was asked is delivered.",
            },
        ),
    ],
)

INSTRUCTION_RESPONSE = Rubric(
    name="instruction-response",
    description="An instruction (or question) and a model's response to it.",
    instructions=(
        "You are an expert evaluator of assistant responses, judging whether this response "
        "is good enough to train a model on. Read the instruction carefully, including its "
        "constraints (format, length, audience, language), then the response. Check facts "
        "and reasoning yourself; if you are unsure whether a claim is true, say so in your "
        "reasoning and do not score it as correct. " + _EVIDENCE
    ),
    criteria=[
        Criterion(
            name="helpfulness",
            description=(
                "Does the response address what the user actually asked, follow the stated "
                "constraints, and give them what they need to act, at a fitting level of "
                "detail? Refusing or deflecting a reasonable request is unhelpful."
            ),
            options={
                5: "Directly and fully answers the request, follows every stated constraint, "
                "and is as concise as the task allows; an expert would send it as is.",
                4: "Answers the request well; a small constraint slip, some padding, or a "
                "missing detail the user would likely want.",
                3: "Addresses the request but only partly: misses a sub-question or a "
                "constraint, or buries the answer in generic filler.",
                2: "Mostly off target: answers a different question, ignores key constraints, "
                "or is too vague to act on.",
                1: "Does not help: irrelevant, an unwarranted refusal, empty, or incoherent.",
            },
        ),
        Criterion(
            name="correctness",
            description=(
                "Are the facts, code, math and reasoning in the response accurate? Errors "
                "that would mislead the user weigh more than cosmetic ones."
            ),
            options={
                5: "Everything checkable is accurate; reasoning is sound; no misleading "
                "statements.",
                4: "Accurate in substance; a minor imprecision that would not mislead.",
                3: "Mostly accurate, but one real error or unsupported claim the user could "
                "trip over.",
                2: "Several errors, or one error in the central claim or answer.",
                1: "The core answer is wrong, fabricated, or harmful.",
            },
        ),
    ],
)

GROUNDEDNESS = Rubric(
    name="groundedness",
    description="A question or task about a given document, and a response that should rest on it.",
    instructions=(
        "You are a meticulous fact-checker. The task below contains (or refers to) a source "
        "document and a question or instruction about it. Check every claim in the response "
        "against the document: a claim is grounded only if the document states or directly "
        "implies it. Outside knowledge, even if true, is NOT grounded. Quote the relevant "
        "document text in your reasoning. " + _EVIDENCE
    ),
    criteria=[
        Criterion(
            name="groundedness",
            description=(
                "Is every claim in the response supported by the document? Count unsupported "
                "or contradicting claims, weighting those central to the answer most."
            ),
            options={
                5: "Every claim is supported by the document; nothing added from outside it; "
                "where the document is silent, the response says so.",
                4: "All central claims supported; one minor peripheral detail is not in the "
                "document but does not contradict it.",
                3: "The main answer is supported, but it adds unsupported details or an "
                "overreaching inference.",
                2: "A central claim is unsupported by the document, or a detail contradicts it.",
                1: "The answer contradicts the document or is largely invented.",
            },
        ),
        Criterion(
            name="relevance",
            description=(
                "Does the response answer the question that was asked, using the parts of the "
                "document that matter for it, without drifting into unrelated content?"
            ),
            options={
                5: "Answers exactly the question, drawing on the document's relevant parts; "
                "nothing off-topic.",
                4: "Answers the question; a little tangential material.",
                3: "Partly answers it, or answers with much material the question did not ask for.",
                2: "Mostly about something else in the document; the question is barely addressed.",
                1: "Does not address the question at all.",
            },
        ),
    ],
)

TOOL_USE = Rubric(
    name="tool-use",
    description="A user request and an assistant turn sequence with tool calls and a final answer.",
    instructions=(
        "You are an expert in function-calling agents, reviewing a conversation in which an "
        "assistant answers a user request by calling tools. The task shows the request (and "
        "the available tools, when given); the response shows the tool calls, their results "
        "and the final answer. Check each call against the tool's schema and the request, and "
        "check the final answer against what the tools actually returned. " + _EVIDENCE
    ),
    criteria=[
        Criterion(
            name="tool_choice",
            description=(
                "Did the assistant call the right tools, in a sensible order, and only when "
                "needed? Calling a tool for something it already knows from the conversation, "
                "or answering from memory where a tool was needed, are both mistakes."
            ),
            options={
                5: "The right tools in a sensible order, each call necessary; no tool used "
                "when it should not be.",
                4: "Right tools; one redundant or slightly suboptimal call.",
                3: "Reaches the goal but with an unnecessary tool, a wrong first choice later "
                "corrected, or a clumsy order.",
                2: "A wrong tool for the core step, or a needed tool never called (answer "
                "guessed instead).",
                1: "Tools irrelevant to the request, calls to tools that do not exist, or no "
                "tool use where the task depends on it.",
            },
        ),
        Criterion(
            name="arguments",
            description=(
                "Are the arguments of each call valid for the tool's schema (names, types, "
                "required fields) and faithful to the user's request (the right ids, values, "
                "units, dates), with nothing invented?"
            ),
            options={
                5: "Every argument is schema-valid and exactly matches what the user asked or "
                "what earlier results provided.",
                4: "All valid; one optional argument missing or a harmless formatting difference.",
                3: "One argument is imprecise (wrong default, loose filter) in a way that may "
                "change results.",
                2: "A required argument is missing or wrong, or a value is invented rather than "
                "taken from the request or earlier results.",
                1: "Arguments are malformed or unrelated to the request throughout.",
            },
        ),
        Criterion(
            name="final_answer",
            description=(
                "Does the final answer correctly answer the user using the tool results, "
                "reporting failures honestly instead of papering over them?"
            ),
            options={
                5: "Correct, complete, and consistent with the tool results; reports any tool "
                "failure or limit honestly.",
                4: "Correct and grounded in the results; slightly incomplete or unclear.",
                3: "Mostly right, but omits part of the request or misreads a minor detail of "
                "a result.",
                2: "Misrepresents a tool result, or answers a different question.",
                1: "Missing, fabricated (contradicts or ignores the results), or claims "
                "success after a tool failed.",
            },
        ),
    ],
)

RUBRICS: dict[str, Rubric] = {
    rubric.name: rubric
    for rubric in (CODING_SOLUTION, INSTRUCTION_RESPONSE, GROUNDEDNESS, TOOL_USE)
}


def get_rubric(name: str) -> Rubric:
    """The built-in rubric `name`; InputError listing the known names otherwise."""
    try:
        return RUBRICS[name]
    except KeyError:
        known = ", ".join(sorted(RUBRICS))
        raise InputError(f"unknown rubric {name!r}: choose one of {known}") from None
