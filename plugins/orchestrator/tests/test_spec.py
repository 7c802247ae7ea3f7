"""Specs in each format, and one clear error naming the file, the key and what is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
from bashgym_orchestrator.spec import SPEC_HELP, Spec, SpecError, load_spec, spec_text

MARKDOWN = """\
+++
repository = "repo"
base_branch = "main"
setup = "uv sync"
copy = [".env", "config/local.toml"]
verify = "uv run pytest"
check = "uv run ruff check ."
budget_usd = 5.0
workers = 3
+++
# Add a  greeting command

The CLI greets people.

## Description
`tool greet NAME` prints a greeting.

```markdown
## Not a section: inside a fence
```

### Details
Greetings are polite.

## Constraints
- no new dependencies
- keep `main.py` under
  100 lines
* stay on Python 3.11

## Acceptance criteria
1. `tool greet Ada` prints `Hello, Ada!`
2. the tests pass
"""

EXPECTED = {
    "title": "Add a greeting command",
    "constraints": [
        "no new dependencies",
        "keep `main.py` under 100 lines",
        "stay on Python 3.11",
    ],
    "acceptance": ["`tool greet Ada` prints `Hello, Ada!`", "the tests pass"],
    "base_branch": "main",
    "setup": "uv sync",
    "copy": [".env", "config/local.toml"],
    "verify": "uv run pytest",
    "check": "uv run ruff check .",
    "budget_usd": 5.0,
    "workers": 3,
}

TOML = """\
title = "Add a greeting command"
description = "`tool greet NAME` prints a greeting."
constraints = ["no new dependencies", "keep `main.py` under 100 lines", "stay on Python 3.11"]
acceptance = ["`tool greet Ada` prints `Hello, Ada!`", "the tests pass"]
repository = "repo"
base_branch = "main"
setup = "uv sync"
copy = [".env", "config/local.toml"]
verify = "uv run pytest"
check = "uv run ruff check ."
budget_usd = 5.0
workers = 3
"""

YAML = """\
title: Add a greeting command
description: "`tool greet NAME` prints a greeting."
constraints:
  - no new dependencies
  - keep `main.py` under 100 lines
  - stay on Python 3.11
acceptance:
  - "`tool greet Ada` prints `Hello, Ada!`"
  - the tests pass
repository: repo
base_branch: main
setup: uv sync
copy: [.env, config/local.toml]
verify: uv run pytest
check: uv run ruff check .
budget_usd: 5.0
workers: 3
"""


@pytest.mark.parametrize(
    ("name", "text"), [("spec.md", MARKDOWN), ("spec.toml", TOML), ("spec.yaml", YAML)]
)
def test_each_format_reads_the_same_spec(tmp_path: Path, name: str, text: str):
    (tmp_path / name).write_text(text)
    spec = load_spec(tmp_path / name)
    assert spec.settings_dict() | {"description": ""} == EXPECTED | {
        "description": "",
        "repository": str(tmp_path / "repo"),  # relative to the spec file's folder
    }
    assert spec.copy == [".env", "config/local.toml"]
    assert "`tool greet NAME` prints a greeting." in spec.description


def test_markdown_description_keeps_the_preamble_fences_and_subheadings(tmp_path: Path):
    (tmp_path / "spec.md").write_text(MARKDOWN)
    description = load_spec(tmp_path / "spec.md").description
    assert description.startswith("The CLI greets people.\n\n`tool greet NAME`")
    assert "## Not a section: inside a fence" in description
    assert "### Details\nGreetings are polite." in description


def test_a_minimal_markdown_spec(tmp_path: Path):
    (tmp_path / "s.markdown").write_text("# Fix the typo in README\n")
    spec = load_spec(tmp_path / "s.markdown")
    assert spec == Spec(title="Fix the typo in README")
    assert spec.repository is None and spec.base_branch is None and spec.workers is None


def test_spec_round_trips_through_json():
    spec = Spec.model_validate({"title": "t", "copy": [".env"], "budget_usd": 2})
    assert Spec.model_validate_json(spec.model_dump_json()) == spec


def test_spec_text_is_what_the_planner_reads(tmp_path: Path):
    (tmp_path / "spec.md").write_text(MARKDOWN)
    text = spec_text(load_spec(tmp_path / "spec.md"))
    assert text.startswith("# Add a greeting command\n\n## Description\nThe CLI greets people.")
    assert "## Constraints\n- no new dependencies\n" in text
    assert "## Acceptance criteria\n- `tool greet Ada` prints `Hello, Ada!`\n" in text
    assert "- per-task check command: `uv run ruff check .`" in text
    assert "- the job's budget: $5" in text
    assert "repo" not in text.split("## How the job runs")[1]  # no local paths for the model


@pytest.mark.parametrize(
    ("name", "text", "messages"),
    [
        (
            "bad.toml",
            'title = "t"\nbudget = 3\nworkers = 0\n',
            [
                "bad.toml: unknown key 'budget' (allowed: title, description, constraints, "
                "acceptance, repository, base_branch, setup, copy, verify, check, budget_usd, "
                "workers)",
                "workers: Input should be greater than or equal to 1 (got 0)",
            ],
        ),
        (
            "bad.yaml",
            "title: t\nbudget_usd: -1\ncopy: [/etc/passwd, ../x]\n",
            [
                "budget_usd: Input should be greater than 0 (got -1)",
                "copy: '/etc/passwd' is not a path inside the repository",
            ],
        ),
        ("bad.yml", "description: no title\n", ["bad.yml: title: required, missing"]),
        ("list.yaml", "- a\n- b\n", ["list.yaml: a YAML spec is one mapping of keys"]),
        ("broken.toml", "title = \n", ["broken.toml: not valid TOML"]),
        ("spec.json", "{}", ["spec.json: a spec file ends in one of .md, .markdown, .toml"]),
        (
            "bad.md",
            "+++\ntitle = 'x'\n+++\n# T\n",
            ["bad.md: title: written in the Markdown body (the title, the sections), not the"],
        ),
        (
            "bad.md",
            "+++\nbudget_usd = 'lots'\n+++\n# T\n",
            ["bad.md: budget_usd: Input should be a valid number"],
        ),
        ("bad.md", "+++\nworkers = 2\n# T\n", ["front matter opened by '+++' on line 1 never"]),
        (
            "bad.md",
            "intro\n# T\n## Settings\n```toml\nworkers = 2\n```\n# Again\n## Constraints\n"
            "## Constraints\n",
            [
                "line 1: text before the '# Title' heading",
                "line 3: unknown section '## Settings' (allowed: Description, Constraints, "
                "Acceptance criteria) (settings go in TOML front matter between '+++' lines)",
                "line 7: a second '# ' title ('Again'); use '## ' here",
                "line 9: a second '## Constraints' section",
            ],
        ),
        ("empty.md", "just words\n", ["no '# Title' heading"]),
    ],
)
def test_bad_specs_say_every_problem_at_once(
    tmp_path: Path, name: str, text: str, messages: list[str]
):
    (tmp_path / name).write_text(text)
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / name)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / name) + ": ")
    assert "\n" not in message
    for expected in messages:
        assert expected in message


def test_a_missing_spec_file(tmp_path: Path):
    with pytest.raises(SpecError, match="no such spec file"):
        load_spec(tmp_path / "nowhere.md")


def test_help_sentence_names_the_grammar():
    for word in ("# Title", "## Acceptance criteria", "+++", "TOML/YAML", "budget_usd"):
        assert word in SPEC_HELP


def test_layout_and_key_problems_are_reported_together(tmp_path: Path):
    path = tmp_path / "spec.md"
    path.write_text("+++\nbudget = 3\ndescription = 'x'\n+++\nwords\nmore words\n## Notes\n")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    problems = str(caught.value).removeprefix(f"{path}: ").split("; ")
    assert problems == [
        "description: written in the Markdown body (the title, the sections), not the front "
        "matter (its keys: repository, base_branch, setup, copy, verify, check, budget_usd, "
        "workers)",
        "line 5: text before the '# Title' heading",
        "line 7: unknown section '## Notes' (allowed: Description, Constraints, Acceptance "
        "criteria)",
        "no '# Title' heading",
        "unknown key 'budget' (allowed: title, description, constraints, acceptance, "
        "repository, base_branch, setup, copy, verify, check, budget_usd, workers)",
    ]
