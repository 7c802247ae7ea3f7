"""A development spec: what the orchestrator is asked to get done, read from Markdown, TOML or YAML.

Markdown (`.md`, `.markdown`) -- optional TOML front matter between two `+++` lines holds the
settings; the body holds the words:

    +++
    repository = "."            # a local git repo, relative to this file (default: the current)
    base_branch = "main"        # default: the repository's current branch
    setup = "uv sync"           # run in each new worktree
    copy = [".env"]             # files every worktree needs, relative to the repository
    verify = "uv run pytest"    # the acceptance command, run after merging
    check = "uv run ruff check ."  # run after each task
    budget_usd = 5.0            # the job's cap
    workers = 3
    +++
    # Add a --version flag

    Text under the title, before any section, is (the start of) the description.

    ## Description
    What to build and why, in prose.
    ## Constraints
    - one bullet per constraint
    ## Acceptance criteria
    - one bullet per criterion

Sections are `## Description`, `## Constraints` and `## Acceptance criteria` (`## Acceptance`
too), in any order, names case-insensitive; `###` and deeper headings are section text, and
headings inside ``` fences are not headings. A bullet's indented continuation lines belong to it;
a paragraph outside any bullet is one item.

TOML (`.toml`) and YAML (`.yaml`, `.yml`) -- one flat table whose keys are the `Spec` fields:
title, description, constraints, acceptance, repository, base_branch, setup, copy, verify,
check, budget_usd, workers.

Every problem in a spec -- an unknown key or section, a bad value -- is reported at once in one
SpecError that names the file, the key and what is allowed. `repository` relative to the spec
file's folder; left out, the caller resolves the current git repository.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bashgym.contracts import InputError

SPEC_HELP = (
    "SPEC is a Markdown file (`# Title`, then `## Description`, `## Constraints`, `## Acceptance "
    "criteria`; settings such as repository, base_branch, setup, copy, verify, check, budget_usd "
    "and workers in TOML front matter between `+++` lines) or a TOML/YAML file with those keys."
)

MARKDOWN_SUFFIXES = (".md", ".markdown")
TOML_SUFFIXES = (".toml",)
YAML_SUFFIXES = (".yaml", ".yml")


class SpecError(InputError):
    """A spec that cannot be used: the message names the file and every problem in it."""


class Spec(BaseModel):
    """What to get done (title, description, constraints, acceptance criteria), where (the
    repository and its base branch) and how each worktree is prepared and checked."""

    # `copy` is the key (BaseModel has a `copy` method): the field is `copy_files`, dumped and
    # read back by its alias, so a spec saved with model_dump_json() loads again
    model_config = ConfigDict(
        extra="forbid", allow_inf_nan=False, validate_by_name=True, serialize_by_alias=True
    )

    title: str = Field(min_length=1, description="What the job achieves, in one line.")
    description: str = Field(default="", description="The work, in prose.")
    constraints: list[str] = Field(default_factory=list, description="What must hold.")
    acceptance: list[str] = Field(
        default_factory=list, description="Acceptance criteria: how to tell it is done."
    )
    repository: Path | None = Field(
        default=None, description="A local git repository; None: the current one."
    )
    base_branch: str | None = Field(
        default=None, description="Branch the work starts from; None: the current branch."
    )
    setup: str | None = Field(default=None, description="Command run in each new worktree.")
    copy_files: list[str] = Field(
        default_factory=list,
        alias="copy",
        description="Files every worktree needs (e.g. .env), relative to the repository.",
    )
    verify: str | None = Field(default=None, description="Acceptance command, after merging.")
    check: str | None = Field(default=None, description="Command run after each task.")
    budget_usd: float | None = Field(default=None, gt=0, description="The job's cost cap.")
    workers: int | None = Field(default=None, ge=1, description="Tasks run at once.")

    @field_validator("title")
    @classmethod
    def _one_line(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("the title is empty")
        return value

    @field_validator("constraints", "acceptance")
    @classmethod
    def _no_blank_items(cls, value: list[str]) -> list[str]:
        return [item.strip() for item in value if item.strip()]

    @field_validator("base_branch", "setup", "verify", "check")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("copy_files")
    @classmethod
    def _relative(cls, value: list[str]) -> list[str]:
        for item in value:
            path = PurePosixPath(item)
            if not item.strip() or path.is_absolute() or ".." in path.parts:
                raise ValueError(
                    f"{item!r} is not a path inside the repository (relative, without '..')"
                )
        return value

    @property
    def copy(self) -> list[str]:  # type: ignore[override]  # `copy` is the spec's key
        """Files every worktree needs (the `copy` key), relative to the repository."""
        return self.copy_files

    def settings_dict(self) -> dict[str, Any]:
        """The spec as its TOML/YAML keys (None values left out)."""
        return self.model_dump(mode="json", exclude_none=True)


FIELDS = tuple(field.alias or name for name, field in Spec.model_fields.items())
TEXT_KEYS = ("title", "description", "constraints", "acceptance")
SETTINGS_KEYS = tuple(key for key in FIELDS if key not in TEXT_KEYS)
SECTIONS = {
    "description": "description",
    "constraints": "constraints",
    "acceptance criteria": "acceptance",
    "acceptance": "acceptance",
}


def load_spec(path: Path) -> Spec:
    """The spec in `path` (format by suffix: see the module docstring); SpecError naming the
    file and each problem. A relative `repository` is taken from the spec file's folder."""
    path = Path(path)
    suffix = path.suffix.lower()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such spec file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the spec ({exc})") from None
    problems: list[str] = []
    if suffix in MARKDOWN_SUFFIXES:
        data, problems = _markdown(text, path)
    elif suffix in TOML_SUFFIXES:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"{path}: not valid TOML ({exc})") from None
    elif suffix in YAML_SUFFIXES:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise SpecError(f"{path}: a YAML spec is one mapping of keys ({', '.join(FIELDS)})")
    else:
        allowed = ", ".join(MARKDOWN_SUFFIXES + TOML_SUFFIXES + YAML_SUFFIXES)
        raise SpecError(f"{path}: a spec file ends in one of {allowed}")
    spec = _validate(data, path, problems)
    if spec.repository is not None:
        repo = spec.repository.expanduser()
        spec.repository = repo if repo.is_absolute() else (path.parent / repo).resolve()
    return spec


def _validate(data: dict[str, Any], path: Path, problems: list[str]) -> Spec:
    """`data` as a Spec; SpecError with `problems` (found before) and every key's."""
    problems = problems + [
        f"unknown key {str(key)!r} (allowed: {', '.join(FIELDS)})"
        for key in data
        if key not in FIELDS
    ]
    known = {key: value for key, value in data.items() if key in FIELDS}
    try:
        spec = Spec.model_validate(known)
    except ValidationError as exc:
        problems += [_problem(error) for error in exc.errors()]
        spec = None
    if problems or spec is None:
        raise SpecError(f"{path}: " + "; ".join(problems))
    return spec


def _problem(error: Any) -> str:
    """One pydantic error as `key: what is wrong (got value)`."""
    where = ".".join(str(part) for part in error["loc"]) or "spec"
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "missing":
        return f"{where}: required, missing"
    given = error.get("input")
    shown = repr(given) if len(repr(given)) <= 60 else repr(given)[:57] + "..."
    return f"{where}: {message} (got {shown})"


_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADING = re.compile(r"^(#{1,2})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}(?:[-*+]|\d+[.)])\s+(.*)$")


def _markdown(text: str, path: Path) -> tuple[dict[str, Any], list[str]]:
    """A Markdown spec as the flat mapping of keys `_validate` takes, and the problems of its
    layout (reported with those of its keys)."""
    lines = text.splitlines()
    data: dict[str, Any] = {}
    problems: list[str] = []
    if lines and lines[0].strip() == "+++":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "+++"), None)
        if end is None:
            raise SpecError(f"{path}: the TOML front matter opened by '+++' on line 1 never closes")
        try:
            data = tomllib.loads("\n".join(lines[1:end]))
        except tomllib.TOMLDecodeError as exc:
            raise SpecError(f"{path}: the front matter is not valid TOML ({exc})") from None
        misplaced = [key for key in data if key in TEXT_KEYS]
        if misplaced:
            problems.append(
                f"{', '.join(misplaced)}: written in the Markdown body (the title, the "
                f"sections), not the front matter (its keys: {', '.join(SETTINGS_KEYS)})"
            )
            data = {key: value for key, value in data.items() if key not in TEXT_KEYS}
        lines = [""] * (end + 1) + lines[end + 1 :]  # keep line numbers for messages

    title: str | None = None
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None  # where body lines go now
    preamble: list[str] = []
    fenced = stray = False
    for number, line in enumerate(lines, 1):
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            if current is not None:
                current.append(line)
            elif line.strip() and title is None and not stray:
                stray = True  # said once, at its first line
                problems.append(f"line {number}: text before the '# Title' heading")
            continue
        level, name = len(heading.group(1)), heading.group(2)
        if level == 1:
            if title is not None:
                problems.append(f"line {number}: a second '# ' title ({name!r}); use '## ' here")
                current = None
                continue
            title, current = name, preamble
            continue
        key = SECTIONS.get(" ".join(name.lower().split()))
        if key is None:
            hint = " (settings go in TOML front matter between '+++' lines)" * (
                name.strip().lower() == "settings"
            )
            problems.append(
                f"line {number}: unknown section '## {name}' (allowed: Description, "
                f"Constraints, Acceptance criteria){hint}"
            )
            current = None
        elif key in sections:
            problems.append(f"line {number}: a second '## {name}' section")
            current = None
        else:
            current = sections[key] = []
    if title is None:
        problems.append("no '# Title' heading")
        title = "-"  # reported above: the keys are still checked
    description = "\n\n".join(
        part for part in (_block(preamble), _block(sections.get("description", []))) if part
    )
    data.update(title=title, description=description)
    for key in ("constraints", "acceptance"):
        if key in sections:
            data[key] = _items(sections[key])
    return data, problems


def _block(lines: list[str]) -> str:
    return "\n".join(lines).strip("\n").rstrip()


def _items(lines: list[str]) -> list[str]:
    """Bullets (with their continuation lines) and loose paragraphs, one item each."""
    items: list[list[str]] = []
    after_blank, in_bullet = True, False
    for line in lines:
        if not line.strip():
            after_blank = True
            continue
        bullet = _BULLET.match(line)
        if bullet:
            items.append([bullet.group(1).strip()])
            in_bullet = True
        elif items and (not after_blank or (in_bullet and line[:1] in " \t")):
            items[-1].append(line.strip())
        else:
            items.append([line.strip()])
            in_bullet = False
        after_blank = False
    return [" ".join(item) for item in items]


def spec_text(spec: Spec) -> str:
    """The spec as the planning prompt quotes it: Markdown with the title, description,
    constraints, acceptance criteria and the commands the job runs."""
    parts = [f"# {spec.title}"]
    if spec.description:
        parts.append(f"## Description\n{spec.description}")
    if spec.constraints:
        parts.append("## Constraints\n" + "\n".join(f"- {c}" for c in spec.constraints))
    if spec.acceptance:
        parts.append("## Acceptance criteria\n" + "\n".join(f"- {a}" for a in spec.acceptance))
    facts = [
        f"- {label}: {value}"
        for label, value in (
            ("base branch", spec.base_branch),
            ("setup command run in each worktree", spec.setup and f"`{spec.setup}`"),
            ("files copied into each worktree", ", ".join(spec.copy_files)),
            ("per-task check command", spec.check and f"`{spec.check}`"),
            ("acceptance command run after merging", spec.verify and f"`{spec.verify}`"),
            ("the job's budget", spec.budget_usd is not None and f"${spec.budget_usd:g}"),
            ("workers", spec.workers),
        )
        if value
    ]
    if facts:
        parts.append("## How the job runs\n" + "\n".join(facts))
    return "\n\n".join(parts) + "\n"
