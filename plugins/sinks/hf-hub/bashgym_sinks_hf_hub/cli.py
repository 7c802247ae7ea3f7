"""The `bashgym push` command line; the work is in push.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from bashgym_cli import fail

from bashgym_sinks_hf_hub.push import PushError, PushInputError, push


def push_command(
    run_dir: Annotated[
        Path, typer.Argument(metavar="RUN_DIR", help="A finished run's directory (its --out).")
    ],
    repo: Annotated[
        str, typer.Option("--repo", help="Hub dataset repo to publish to, e.g. me/agent-sft.")
    ],
    private: Annotated[
        bool,
        typer.Option("--private/--public", help="Visibility if the repo is created now."),
    ] = True,
    token_env: Annotated[
        str,
        typer.Option(
            "--token-env",
            help="Name of the env var holding the Hub token (never the token itself).",
        ),
    ] = "HF_TOKEN",
) -> None:
    """Publish a finished run's written rows to the Hugging Face Hub, without running it again.

    Uploads the hf-hub folder the run wrote (data shards, dataset card).

    A run that wrote nemo-jsonl instead is laid out as RUN_DIR/hf-<name> first.

    Exit 2 for what the user can fix (no finished run there, the token variable unset, a bad
    repo id); 1 when the Hub refuses or the rows cannot be laid out.

    Example: HF_TOKEN=hf_... bashgym push runs/r1 --repo me/agent-sft
    """
    try:
        done = push(run_dir, repo, private=private, token_env=token_env)
    except PushInputError as exc:  # the user's to fix: 2, as `report` and `run` exit
        raise fail(f"push: {exc}", 2) from None
    except PushError as exc:  # the Hub or the disk failed: 1
        raise fail(f"push: {exc}", 1) from None
    rows = ", ".join(f"{split} {n}" for split, n in done.rows.items())
    typer.echo(f"pushed {done.folder} ({rows}) to {done.url}")
