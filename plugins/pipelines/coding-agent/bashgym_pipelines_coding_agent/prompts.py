"""The prompts: one that writes a developer's task, one that writes the agent's trajectory.

Written the way one briefs a strong model: say who writes what for whom, give the concrete
attributes, and spell out the failure modes seen in synthetic agent data (tasks with no
concrete files or acceptance criteria; trajectories that edit before reading, invent tools,
print observations inconsistent with earlier steps, or claim tests pass without running them).
Templates are Jinja over the row's columns; a seed task is shown only when there is one,
since DataDesigner rejects a template naming a column that does not exist. The fixed
instructions come first and the row's own values last: requests then share a long prefix, which
a server's prompt cache (the embedded model's slots, Anthropic's and OpenAI's caches) skips.
"""

from __future__ import annotations

from bashgym_pipelines_coding_agent.trajectory import TOOLS

TASK_SYSTEM_PROMPT = (
    "You write realistic requests that software developers give to an autonomous coding agent "
    "(such as Claude Code or Codex) working inside their repository. You know how real "
    "codebases are laid out and how developers describe work: concretely, tersely, with the "
    "details an engineer needs."
)

SEED_BLOCK = """
Here is a real request from a developer's session. Use it as inspiration for the kind of work
and the level of detail, but write a NEW task: change the project, the names and the specifics.
Never copy file paths, URLs, hostnames, usernames, keys or other identifiers from it. Where it
conflicts with the attributes above, the attributes win.
<inspiration>
{{ seed_task }}
</inspiration>
"""

TASK_PROMPT = """\
Write one task that a developer would type to a coding agent working in their repository.

Requirements:
- Ground it in a concrete, plausible codebase: name the files, modules, functions, commands or
  error messages involved (invented, but consistent with each other), e.g. `src/billing/invoice.py`.
- State the goal and what "done" means: the behaviour expected, tests that must pass, and any
  constraint (keep the public API, no new dependencies, ...).
- Match the complexity: a simple task is one focused change; a complex one needs investigation
  and touches several files.
- Write as developers do: direct and specific, 2 to 8 sentences; a short error message, stack
  trace or code snippet is welcome when it helps.
- No secrets, tokens, real company or person names, or absolute home-directory paths.
- Reply with the task text only: no title, preamble, quotes or explanation.

Attributes of the task:
{attributes}
{seed_block}"""


def task_prompt(samplers: list[str], seeded: bool) -> str:
    """The task-writer prompt over the sampler columns (and the seed task when seeded)."""
    attributes = "\n".join(f"- {c.replace('_', ' ')}: {{{{ {c} }}}}" for c in samplers)
    return TASK_PROMPT.format(attributes=attributes, seed_block=SEED_BLOCK if seeded else "")


SOLVER_SYSTEM_PROMPT = (
    "You are an expert software engineer who writes the complete, faithful work logs of an "
    "autonomous coding agent: every tool call it makes and exactly what each call returns. "
    "Your logs are used to train coding agents, so they must show excellent engineering "
    "practice and be internally consistent from the first step to the last."
)

TOOL_LIST = "\n".join(f"- {line}" for line in TOOLS.values())

SOLUTION_PROMPT = f"""\
Write the trajectory of an expert coding agent solving the task below in the developer's
repository.

The agent has exactly these tools and no others:
{TOOL_LIST}

How the agent works:
1. plan: 2 to 6 short, concrete steps it intends to take.
2. steps: the tool calls in order. It inspects before it changes (list, search, read the code
   involved), makes targeted changes, then verifies by running the tests or the program. When
   something fails it reads the error, fixes the cause and runs again. A simple task takes
   about 4 to 8 calls, a complex one up to 16.
3. Each step: `thought` gives the reason for the call from what was observed so far; fill only
   the arguments of the tool called and leave the other argument fields null.
4. Observations are what the tool would really return in this repository: file text matching
   what earlier steps read or wrote, realistic command and test-runner output with counts,
   tracebacks and exit codes. Trim long output to the relevant part with "...".
5. Code is complete, idiomatic and correct in the repository's language: write_file content is
   the whole file; edit_file old_text appears exactly once in the file as last read. No
   placeholders, TODOs or "rest unchanged" comments.
6. summary: what changed and where, how it was verified, and anything the developer should
   decide or know.

Never invent tools, ask the developer questions, or claim tests pass unless a step shows them
passing.

<task>
{{{{ task_prompt }}}}
</task>

The repository: {{{{ language }}}}, {{{{ codebase_size }}}}."""


def solution_prompt() -> str:
    """The trajectory prompt over `task_prompt`, `language` and `codebase_size`."""
    return SOLUTION_PROMPT


AGENT_SYSTEM_PROMPT = (
    "You are a coding agent working in a software repository. Your tools:\n"
    f"{TOOL_LIST}\n"
    "Plan first, inspect the relevant code before changing it, make focused changes, verify "
    "them by running the tests or the program, and finish with a short summary of what you "
    "changed and how you checked it."
)
