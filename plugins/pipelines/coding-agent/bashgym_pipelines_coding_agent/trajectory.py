"""The shape of a solution: a coding agent's tool-use trajectory, and how it becomes text.

Why a fixed Pydantic schema instead of free text: a trajectory whose tool calls are fields can be
checked (the tool must be one of TOOLS, a parse failure is retried by DataDesigner and counted
when it never parses), rendered consistently, and mined for the Python files it wrote so ruff
can lint them. Each tool argument is its own nullable field rather than an `arguments` dict
because DataDesigner's Jinja sandbox forbids nested loops: a flat step renders in one loop.

The templates below run inside that sandbox (no `{% set %}`, no `join`/`tojson`/`selectattr`,
no nested `for`, AST depth <= 10): `jsonpath` is the one way to select steps, so the Python
files are picked with an RFC 9535 filter. A template that fails on a row silently drops the row
in DataDesigner 0.9, so every optional field is tested before it is used.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

TOOLS: dict[str, str] = {
    "list_files": "list_files(path): list a directory of the repository (relative path).",
    "read_file": "read_file(path): return a file's contents with line numbers.",
    "search_code": "search_code(pattern, path): regex search (like `grep -rn`) under path.",
    "edit_file": "edit_file(path, old_text, new_text): replace the one exact occurrence of "
    "old_text in the file with new_text.",
    "write_file": "write_file(path, content): create or overwrite a file with the COMPLETE "
    "content.",
    "bash": "bash(command): run a shell command in the repository root; returns stdout, stderr "
    "and the exit code.",
    "run_tests": "run_tests(command): run the test suite or part of it, e.g. "
    "`pytest tests/test_api.py -q`; returns the runner's output and exit code.",
}
ToolName = Literal[
    "list_files", "read_file", "search_code", "edit_file", "write_file", "bash", "run_tests"
]


class ToolStep(BaseModel):
    """One thought → tool call → observation turn of the agent."""

    thought: str = Field(
        description="Why the agent makes this call now, from what it has seen so far (1-3 "
        "sentences)."
    )
    tool: ToolName = Field(description="The tool called; one of the agent's tools only.")
    path: str | None = Field(
        default=None,
        description="Relative file or directory path (list_files, read_file, search_code, "
        "edit_file, write_file); null for other tools.",
    )
    pattern: str | None = Field(
        default=None, description="Regex searched for (search_code only); else null."
    )
    command: str | None = Field(
        default=None, description="Command line (bash and run_tests only); else null."
    )
    old_text: str | None = Field(
        default=None,
        description="Exact text replaced, unique in the file as last read (edit_file only).",
    )
    new_text: str | None = Field(
        default=None, description="Replacement text (edit_file only); else null."
    )
    content: str | None = Field(
        default=None,
        description="The whole new file, complete and runnable (write_file only); else null.",
    )
    observation: str = Field(
        description="What the tool returned, as it would really print in this repository and "
        "consistent with every earlier step (file text, command output, test results, exit "
        "code); long output trimmed to the relevant part with '...'."
    )


class Trajectory(BaseModel):
    """A complete solution: the plan, the tool calls with their results, the final report."""

    plan: list[str] = Field(
        min_length=1, description="2-6 short, concrete steps the agent intends to take."
    )
    steps: list[ToolStep] = Field(
        min_length=1, description="The tool calls in order, each with its observation."
    )
    summary: str = Field(
        description="The final message to the developer: what changed and where, how it was "
        "verified, and anything left for them to decide."
    )


def render_template(column: str) -> str:
    """Jinja that renders the trajectory in `column` as the assistant's markdown answer.

    Outputs are fenced with four backticks so file contents holding ``` fences stay intact.
    """
    t = column
    return (
        "## Plan\n"
        f"{{% for item in {t}.plan %}}{{{{ loop.index }}}}. {{{{ item }}}}\n{{% endfor %}}"
        "\n## Work log\n"
        f"{{% for s in {t}.steps %}}"
        "\n### {{ loop.index }}. `{{ s.tool }}`{% if s.path %} {{ s.path }}{% endif %}\n\n"
        "{{ s.thought }}\n"
        "{% if s.pattern %}\nSearch for `{{ s.pattern }}`\n{% endif %}"
        "{% if s.command %}\n````console\n$ {{ s.command }}\n````\n{% endif %}"
        "{% if s.old_text %}\nReplace:\n````\n{{ s.old_text.rstrip() }}\n````\n{% endif %}"
        "{% if s.new_text is string %}\nWith:\n````\n{{ s.new_text.rstrip() }}\n````\n{% endif %}"
        "{% if s.content %}\nContent:\n````\n{{ s.content.rstrip() }}\n````\n{% endif %}"
        "\nResult:\n````\n{{ s.observation.rstrip() }}\n````\n"
        "{% endfor %}"
        f"\n## Summary\n{{{{ {t}.summary }}}}\n"
    )


# Steps that wrote a whole Python file: only complete files can be linted (an edit's new_text
# is a fragment whose names are defined elsewhere, which ruff would flag as undefined).
PYTHON_FILES = (
    "$.steps[?(@.tool == 'write_file' && @.content != null && search(@.path, '[.]pyi?$'))]"
)
NO_FILE = "# no Python file written in this slot\n"


def python_file_template(column: str, index: int) -> str:
    """Jinja giving the `index`-th (0-based) Python file the trajectory in `column` wrote, with
    its path as a first comment line, or a comment when there is none.

    One file per column, because ruff on several files pasted together reports false errors
    (a test's `from app import f` "redefines" the `f` of the module pasted before it).
    """
    files = f'({column} | jsonpath("{PYTHON_FILES}"))'
    return (
        f"{{% if {files} | length > {index} and {files}[{index}].content | trim %}}"
        f"# {{{{ {files}[{index}].path }}}}\n{{{{ {files}[{index}].content | trim }}}}\n"
        f"{{% else %}}{NO_FILE}{{% endif %}}"
    )


def either_python_file_template(condition: str, first: str, second: str, index: int) -> str:
    """`python_file_template` of trajectory `first` when the Jinja `condition` holds, else of
    `second` (how DPO lints the chosen side without a column holding the chosen trajectory;
    the sandbox's AST depth limit of 10 rules out an inline conditional inside the filter)."""
    return (
        f"{{% if {condition} %}}{python_file_template(first, index)}"
        f"{{% else %}}{python_file_template(second, index)}{{% endif %}}"
    )
