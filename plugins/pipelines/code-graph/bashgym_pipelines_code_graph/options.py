"""What a user may write for the `code-repo` source and the `code-graph-pairs` pipeline.

Plain pydantic config, kept apart from the code that acts on it (`--set source.KEY=VALUE`,
`--set pipeline.KEY=VALUE`, or the [source] / [pipeline] tables of a run file).
"""

from __future__ import annotations

from bashgym_designer.rubrics import JudgedPipelineOptions
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from bashgym.contracts import Options
from bashgym_pipelines_code_graph.pairs import STRUCTURAL_TYPES
from bashgym_pipelines_code_graph.repos import RepoSpec

CATEGORIES = ("architecture", "dependencies", "navigation", "understanding")


class CodeRepoOptions(Options):
    path: str | list[str] = Field(
        description="Repositories: local folders or git checkouts, or git URLs (file://, "
        "https://, ssh) to clone; one, or a list. Each is checkpointed on its own, so a "
        "resumed run does not read a finished repository again."
    )
    ref: str | None = Field(
        default=None,
        description="Branch, tag or commit to read every repository at (they are cloned into "
        "the run dir and checked out there); default: local ones as they are on disk, URLs "
        "at their default branch.",
    )
    workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="Processes that parse files, the run's own process included (parsing is "
        "CPU-bound; names are resolved once per repository, in the run's process).",
    )
    max_source_chars: int = Field(
        default=4000,
        ge=100,
        description="Each node keeps at most this many characters of its source.",
    )
    max_file_bytes: int = Field(
        default=1_000_000,
        ge=1,
        description="Larger files are skipped (counted as graph.files_skipped): usually "
        "generated or minified code.",
    )

    @property
    def paths(self) -> list[str]:
        return [self.path] if isinstance(self.path, str) else list(self.path)

    @field_validator("path")
    @classmethod
    def _some(cls, value: str | list[str]) -> str | list[str]:
        items = [value] if isinstance(value, str) else value
        if not items or not all(isinstance(p, str) and p.strip() for p in items):
            raise ValueError("name at least one repository")
        # refused only when open() could read none of them (its "no repository could be read"):
        # one missing among readable ones is noted and the others are read, as before
        problems = [(item, why) for item in items if (why := missing_folder(item.strip()))]
        if problems and len(problems) == len(items):
            if isinstance(value, str):  # (the kernel's message adds the path given)
                raise PydanticCustomError("path_missing", problems[0][1])
            said = "; ".join(f"{item!r} {why}" for item, why in problems)
            raise PydanticCustomError("path_missing", said)
        return value


def missing_folder(spec: str) -> str | None:
    """Why a local repository (a folder, or a file:// URL) cannot be read, checked when the
    run is resolved so a typo is exit 2 before a run folder exists; None for one that can be,
    and for a remote URL (only cloning can tell). open() checks again: a folder may vanish."""
    local = RepoSpec(spec).local_path()
    if local is None or local.is_dir():
        return None
    return "is not a folder" if local.exists() else "does not exist"


class CodeGraphPairsOptions(JudgedPipelineOptions):
    qa: bool = Field(
        default=True,
        description="Ask the model questions about the graph and keep the validated, judged "
        "answers as Q&A triplets; false: structural pairs only, and no model is called.",
    )
    pair_types: list[str] = Field(
        default_factory=lambda: list(STRUCTURAL_TYPES),
        description="Structural pair types to write: contains, calls, imports, inherits, "
        "same_file, docstring.",
    )
    max_text_chars: int = Field(
        default=2000, ge=100, description="Each anchor/positive/negative text is cut here."
    )
    model: str = Field(default="default", description="Model alias that asks and answers.")
    questions_per_repo: int = Field(
        default=20, ge=0, description="Questions asked per repository (categories in turn)."
    )
    categories: list[str] = Field(
        default_factory=lambda: list(CATEGORIES),
        description="Question categories, used in turn: architecture, dependencies, "
        "navigation, understanding (or your own labels).",
    )
    budget_usd: float | None = Field(
        default=None,
        gt=0,
        description="Stop asking new questions once the Q&A models have cost this much "
        "(each model's list price, 0 for one served here; questions already in flight "
        "finish). Structural pairs are always written.",
    )
    budget_tokens: int | None = Field(
        default=None,
        gt=0,
        description="Stop asking new questions once the Q&A models have used this many "
        "tokens (for models with no known price, e.g. self-hosted ones).",
    )
    thresholds: dict[str, int] = Field(
        default_factory=dict,
        description="Minimum judge score per code-qa criterion (relevance); default 3.",
    )

    @field_validator("pair_types")
    @classmethod
    def _known_types(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(STRUCTURAL_TYPES))
        if unknown:
            raise ValueError(f"unknown pair types {unknown}: use {list(STRUCTURAL_TYPES)}")
        return value

    @field_validator("categories")
    @classmethod
    def _some_categories(cls, value: list[str]) -> list[str]:
        if not value or not all(isinstance(c, str) and c.strip() for c in value):
            raise ValueError("name at least one category")
        return value
