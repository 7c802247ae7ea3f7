"""The dataset card (README.md): Hub metadata in YAML front matter, then how the data was made.

Why generate it: a Hub dataset without a card is unusable by anyone but its author, and the YAML
`configs` block is what tells `datasets.load_dataset` (and the Hub viewer) which files are which
split. The body records what produced the data — the sources, pipeline, judges and their
options from the run's `run.toml`, the counts and drop reasons, the split rule — so a reader can
judge and reproduce it. Local absolute paths in options are shortened to their last part
(`.../qa.csv`, paths.py), as the rows' path columns are: a published card should not reveal a
user's home directory, and a row's `source_file` then reads as the card's `source.path`.
Option values (name, tags, repo id) are redacted as run.toml is, before YAML quotes them, so a
redacted tag is still one string.
With JSONL data the YAML also declares `dataset_info.features` (JSON files carry no schema).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from huggingface_hub import DatasetCardData

from bashgym import __version__
from bashgym.contracts import RunContext
from bashgym.runspec import toml_dumps
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.paths import looks_absolute, short_path

FORMAT_NOTES = {
    "traces": (
        "Each row is one coding-agent run as a tool-use SFT conversation that TRL's SFTTrainer "
        "and HF chat templates take as it is: `messages` (OpenAI chat shape: the system prompt "
        "first, assistant `tool_calls`, `tool` results, the assistant's answer last) and `tools` "
        "(the function schemas offered). Tool-call `arguments` and tool `parameters` are "
        "`datasets.Json` values (objects when loaded). Runs that failed or ended on an error "
        "are not rows. The other columns are flat summaries to filter on (ids, source, model, "
        "success, tokens, cost)."
    ),
    "chat": "Each row holds `messages` in OpenAI chat shape, the assistant's turn last.",
    "dpo": "Each row is a preference pair: `prompt`, `chosen`, `rejected`.",
}


def size_category(n: int) -> str:
    for bound, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if n < bound:
            return label
    return "100K<n<1M" if n < 1_000_000 else "n>1M"


def run_config(run_dir: Path) -> dict[str, Any] | None:
    """The run's resolved config (run.toml), with `out` left out and local paths shortened."""
    path = run_dir / "run.toml"
    if not path.is_file():
        return None
    try:
        doc = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError:
        return None
    doc.pop("out", None)
    return _shorten_paths(doc)


def _shorten_paths(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _shorten_paths(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten_paths(v) for v in value]
    if isinstance(value, str) and looks_absolute(value):
        return short_path(value)
    return value


def _steps(config: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for role in ("source", "pipeline", "judges", "judge", "sinks", "sink"):
        tables = config.get(role)
        for table in tables if isinstance(tables, list) else [tables] if tables else []:
            options = {k: v for k, v in table.items() if k != "plugin"}
            out.append((role.rstrip("s"), str(table.get("plugin")), options))
    return out


def render(
    options: HfHubOptions,
    run: RunContext,
    output_format: str,
    splits: dict[str, int],
    data_glob: dict[str, str],
    key_from: dict[str, int],
    seed: int,
    features: Any | None = None,
    shortened: list[str] | None = None,
) -> str:
    """README.md text: YAML front matter (configs, license, tasks, tags, name, and the
    `datasets.Features` when given) and the body; `shortened`: the rows' columns whose local
    paths were cut to their last part, which the card says."""
    clean = run.redact
    repo_id = clean(options.repo_id) if options.repo_id else None
    name = clean(options.pretty_name or "") or repo_id or run.run_dir.name
    total = sum(splits.values())
    tags = [clean(t) for t in options.tags]
    data = DatasetCardData(
        license=clean(options.license),
        pretty_name=name,
        task_categories=[clean(t) for t in options.task_categories or ["text-generation"]],
        tags=list(dict.fromkeys(["bashgym", "synthetic", output_format, *tags])),
        size_categories=[size_category(total)],
        configs=[
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": data_glob[s]} for s in splits],
            }
        ],
    )
    if features is not None:
        _declare(data, features)
    config = run_config(run.run_dir)
    lines = [
        "---",
        data.to_yaml(),
        "---",
        "",
        f"# {name}",
        "",
        f"Made with BashGym {__version__}, which turns coding-agent work into training data.",
        "",
        "## Splits",
        "",
        "| split | rows |",
        "|---|---|",
        *(f"| {s} | {n} |" for s, n in splits.items()),
        "",
        f"Records are assigned by a hash of their id (seed {seed}, validation share "
        f"{options.val_fraction}; ids from {_keys(key_from)}), never by row order, so a re-run "
        "or resumed job never moves a record between train and validation.",
        "",
        "## Format",
        "",
        f"Output format: `{output_format}`. "
        + FORMAT_NOTES.get(output_format, "Rows as the pipeline produced them.")
        + _paths_note(shortened or [], options.include_trace),
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("{repo_id or "path/to/this/folder"}")',
        "```",
        "",
        "## How it was made",
        "",
    ]
    if config is None:
        lines += ["No run.toml was found beside this dataset.", ""]
    else:
        for role, plugin, opts in _steps(config):
            lines.append(f"- {role}: `{plugin}`" + (f" ({len(opts)} options)" if opts else ""))
        lines += [
            "",
            "Pipeline config (the run's resolved `run.toml`; local paths shortened to their "
            "last part):",
            "",
            "```toml",
            toml_dumps(config).strip(),
            "```",
            "",
        ]
    counts = dict(run.counts)
    if counts or run.dropped:
        lines += ["## Counts", "", "| what | n |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in counts.items()]
        lines += [f"| dropped: {k} | {v} |" for k, v in run.dropped.items()]
        lines.append("")
    return "\n".join(lines)


def _declare(data: DatasetCardData, features: Any) -> None:
    """`dataset_info.features` in the card's YAML, written by `datasets` itself so that
    `load_dataset` reads them back (and casts every split's files to them)."""
    from datasets.info import DatasetInfo, DatasetInfosDict  # imported already: by `features`

    DatasetInfosDict({"default": DatasetInfo(features=features)}).to_dataset_card_data(data)


def _paths_note(columns: list[str], include_trace: bool) -> str:
    if not columns:
        return ""
    named = " and ".join(", ".join(f"`{c}`" for c in columns).rsplit(", ", 1))
    said = f" Local paths in {named} are shortened to their last part (`.../name`)"
    if include_trace:
        said += "; the `trace` column holds each Trace as it was, its paths whole"
    return said + "."


def _keys(key_from: dict[str, int]) -> str:
    return ", ".join(f"`{k}` ({n})" for k, n in key_from.items()) or "none"
