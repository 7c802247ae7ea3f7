"""Chunks shipped with the plugin, so `bashgym preview -p from-unstructured` runs with no source.

They have the documents source's columns (text, path, chunk_index, lines, ...), so a preview
shows exactly what a real run over a docs folder produces.
"""

from __future__ import annotations

from typing import Any

CHUNKS = [
    (
        "docs/cli.md",
        1,
        12,
        "## Resuming a run\n\nA run that stops part way (a crash, Ctrl-C, a lost machine) is "
        "resumed by running the same command again: finished batches are kept and only the "
        "missing rows are generated. Pass `--fresh` to start over instead. A run directory "
        "holds `run.toml`, the resolved configuration, so `bashgym run RUN_DIR/run.toml` "
        "repeats a run exactly.",
    ),
    (
        "docs/models.md",
        20,
        31,
        "## API keys\n\nKeys are never written in configuration files. Each model alias names "
        "the environment variable that holds its key with `api_key_env`, for example "
        '`api_key_env = "OPENAI_API_KEY"`. If the variable is not set when a run starts, '
        "the run stops before any request with an error naming the variable, instead of "
        "sending an empty key and failing with a 401.",
    ),
    (
        "src/retry.py",
        1,
        18,
        "def backoff(attempt: int, base: float = 0.5, cap: float = 30.0) -> float:\n"
        '    """Seconds to wait before retry number `attempt` (1-based): exponential with '
        'full jitter."""\n'
        "    if attempt < 1:\n"
        '        raise ValueError("attempt starts at 1")\n'
        "    return random.uniform(0, min(cap, base * 2 ** (attempt - 1)))\n",
    ),
]


def example_rows() -> list[dict[str, Any]]:
    return [
        {
            "text": text,
            "path": path,
            "chunk_index": 0,
            "num_chunks": 1,
            "start_line": start,
            "end_line": end,
            "doc_type": "code" if path.endswith(".py") else "markdown",
        }
        for path, start, end, text in CHUNKS
    ]
