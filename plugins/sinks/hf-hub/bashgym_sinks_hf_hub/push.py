"""`bashgym push RUN_DIR --repo ID`: publish a finished run's written rows to the Hub.

Why a command of its own: a run's rows are already written and scrubbed; publishing them must
not run the model again (the API's push endpoint runs this command as a child process, so every
error is one line and a non-zero exit). What is published, first found wins:
1. the run's hf-hub folder (data shards and card), as the sink wrote it;
2. else its nemo-jsonl split files, laid out as a Hub folder `RUN_DIR/hf-<run dir name>` with a
   generated card (the same layout the hf-hub sink writes, JSONL shards).
The token is read from the env var named by `--token-env` and handed to huggingface_hub only.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bashgym.contracts import RunContext
from bashgym.settings import SettingsError, load_settings
from bashgym_sinks_hf_hub.card import render
from bashgym_sinks_hf_hub.options import HfHubOptions
from bashgym_sinks_hf_hub.paths import shorten_row, shortened
from bashgym_sinks_hf_hub.sink import SPLITS, default_folder

NEMO_SPLITS = {"train": "train", "val": "validation"}


class PushError(Exception):
    """Why nothing was published; its text is the one line the command prints. A failure
    outside the user's hands (the Hub refused, a disk error): the command exits 1."""


class PushInputError(PushError):
    """Nothing was published because of what the user gave (a path that is no finished run, a
    token variable not set, a repo id the Hub cannot take): fixed by the user, so the command
    exits 2, as every command does for its user's mistake (`report`, `run`)."""


@dataclass
class Published:
    folder: Path
    rows: dict[str, int]
    url: str


def find_folder(
    run_dir: Path, run: dict[str, Any], repo: str, private: bool
) -> tuple[Path, dict[str, int]]:
    """The Hub folder to upload and its rows per split (building it from nemo-jsonl files)."""
    outputs = run.get("outputs") or {}
    hub = [Path(p) for p in outputs.get("hf-hub") or [] if Path(p).name == "README.md"]
    if hub and hub[0].is_file():
        folder = hub[0].parent
        rows = {s: _count(sorted((folder / "data").glob(f"{s}-*"))) for s in SPLITS}
        return folder, {s: n for s, n in rows.items() if n}
    manifests = [
        Path(p) for p in outputs.get("nemo-jsonl") or [] if Path(p).name == "manifest.json"
    ]
    if manifests and manifests[0].is_file():
        return _from_nemo_jsonl(run_dir, manifests[0], repo, private)
    wrote = ", ".join(sorted(outputs)) or "nothing"
    raise PushInputError(
        f"{run_dir} has no Hub-ready rows: it wrote {wrote}, not hf-hub or nemo-jsonl "
        "(run it with --sink hf-hub or --sink nemo-jsonl)"
    )


def _finished(run_dir: Path) -> dict[str, Any]:
    if not run_dir.exists():
        raise PushInputError(f"{run_dir} does not exist (give a finished run's --out folder)")
    if not run_dir.is_dir():
        raise PushInputError(f"{run_dir} is not a run directory")
    try:
        run = json.loads((run_dir / "run.json").read_text())
    except FileNotFoundError:
        raise PushInputError(f"{run_dir} is not a run directory (no run.json)") from None
    except ValueError:
        raise PushInputError(f"{run_dir}/run.json is not valid JSON") from None
    if not isinstance(run, dict):
        raise PushInputError(f"{run_dir}/run.json is not a run's summary")
    if run.get("status") != "ok":
        raise PushInputError(
            f"run {run_dir.name} is not finished with rows (status {run.get('status')!r}); "
            "only a run with status 'ok' is published"
        )
    return run


def _check_repo_id(repo: str) -> None:
    """A repo id the Hub would refuse is the user's typo: said before any file is laid out or
    any request is made (huggingface_hub's own rule, so the two cannot disagree)."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(repo)
    except HFValidationError as exc:
        why = str(exc).split(". ")[0].rstrip(".")
        raise PushInputError(
            f"--repo {repo!r} is not a Hub repo id: {why} (e.g. me/agent-sft)"
        ) from None


def _count(paths: list[Path]) -> int:
    total = 0
    for path in paths:
        if path.suffix == ".parquet":
            import pyarrow.parquet as pq

            total += pq.read_metadata(path).num_rows
        else:
            with path.open("rb") as lines:
                total += sum(1 for line in lines if line.strip())
    return total


def _from_nemo_jsonl(
    run_dir: Path, manifest_path: Path, repo: str, private: bool
) -> tuple[Path, dict[str, int]]:
    """`RUN_DIR/hf-<name>` laid out from the nemo-jsonl files. Built in a temporary folder
    beside it and renamed into place only when whole, so a failure (a bad settings file, a
    full disk) leaves no half folder a later `datasets.load_dataset` would read as the run's."""
    folder = default_folder(run_dir)
    building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=run_dir))
    try:
        rows = _lay_out(run_dir, manifest_path, building, repo, private)
        if folder.exists():  # an earlier push's folder: replaced by this one
            shutil.rmtree(folder)
        building.rename(folder)
    finally:
        shutil.rmtree(building, ignore_errors=True)  # gone already when renamed
    return folder, rows


def _lay_out(
    run_dir: Path, manifest_path: Path, folder: Path, repo: str, private: bool
) -> dict[str, int]:
    manifest = json.loads(manifest_path.read_text())
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    rows: dict[str, int] = {}
    path_columns: set[str] = set()
    for key, split in NEMO_SPLITS.items():
        name = (manifest.get("files") or {}).get(key)
        if name and (manifest_path.parent / name).is_file():
            target = data / f"{split}-00000-of-00001.jsonl"
            path_columns |= _copy_shortened(manifest_path.parent / name, target)
            rows[split] = _count([target])
    if not rows:
        raise PushInputError(f"{manifest_path.parent} holds no written lines to publish")
    split_info = manifest.get("split") or {}
    options = HfHubOptions(
        repo_id=repo,
        private=private,
        file_format="jsonl",
        val_fraction=split_info.get("val_fraction", 0.05),
    )
    run = _card_context(run_dir, split_info.get("seed") or 0)
    shape = "traces" if manifest.get("input") == "traces" else str(manifest.get("format"))
    card = render(
        options,
        run,
        shape,
        rows,
        {s: f"data/{s}-*.jsonl" for s in rows},
        split_info.get("key") or {},
        run.seed,
        shortened=shortened(list(path_columns)),  # the card says so, as the sink's card does
    )
    (folder / "README.md").write_text(card, encoding="utf-8")
    return rows


def _card_context(run_dir: Path, seed: int) -> RunContext:
    """The context the card is rendered in: the settings every command loads (the plugins'
    tables too: a bashgym.toml with an `[api]` or `[designer]` table is valid, where the
    kernel's bare Settings refuses it) and the run's secret scrubbing, so `run.redact` redacts
    the card's option values as the hf-hub sink's own card does."""
    from bashgym.plugins import current_host

    host = current_host()
    try:
        settings = load_settings(host.registry.settings_tables)
    except SettingsError as exc:
        raise PushInputError(str(exc)) from None
    scrubbing = host.hook.open_scrubbing(settings=settings, registry=host.registry)
    return RunContext(run_dir=run_dir, settings=settings, seed=seed, scrubbing=scrubbing)


def _copy_shortened(source: Path, target: Path) -> set[str]:
    """The split file's lines, a line with a local path column (a `source_file` kept with
    `sink.keep_fields`) shortened as the hf-hub sink's rows are; other lines byte for byte.
    Returns the path columns the lines had, which the card names (card.render)."""
    found: set[str] = set()
    with source.open(encoding="utf-8") as lines, target.open("w", encoding="utf-8") as out:
        for line in lines:
            row = json.loads(line) if line.strip() else None
            if isinstance(row, dict) and (columns := shortened(list(row))):
                found.update(columns)
                line = json.dumps(shorten_row(row), ensure_ascii=False) + "\n"
            out.write(line)
    return found


def push(run_dir: Path, repo: str, *, private: bool, token_env: str) -> Published:
    """Upload the run's Hub folder to dataset repo `repo`; PushError says why not (a
    PushInputError when the user can fix it)."""
    _check_repo_id(repo)
    run = _finished(run_dir)
    token = os.environ.get(token_env)
    if not token:
        raise PushInputError(
            f"${token_env} is not set: export a Hub token there (or --token-env NAME)"
        )
    try:
        folder, rows = find_folder(run_dir, run, repo, private)
    except (OSError, ValueError) as exc:  # an unreadable manifest, a full disk, ...
        raise PushError(f"cannot lay out {run_dir.name}'s rows for the Hub: {exc}") from None
    from huggingface_hub import HfApi  # ~0.18 s (measured): only when pushing
    from huggingface_hub.errors import HfHubHTTPError

    api = HfApi()
    try:
        api.create_repo(repo, repo_type="dataset", private=private, exist_ok=True, token=token)
        api.upload_folder(
            repo_id=repo,
            folder_path=str(folder),
            repo_type="dataset",
            token=token,
            commit_message=f"BashGym run {run_dir.name}",
        )
    except _unreachable() as exc:  # before OSError: requests' errors and offline mode are ones
        raise PushError(f"cannot reach the Hub ({api.endpoint}): {_first_line(exc)}") from None
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise PushError(f"the Hub refused the upload to {repo}: {_first_line(exc)}") from None
    return Published(folder, rows, f"{api.endpoint}/datasets/{repo}")


def _unreachable() -> tuple[type[BaseException], ...]:
    """The errors that mean no answer came from the Hub (no network, a refused connection, a
    timeout, HF_HUB_OFFLINE=1): the transport errors of httpx (huggingface_hub 1.x) and of
    requests (0.x), which otherwise escape as a traceback of hundreds of lines."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    found: list[type[BaseException]] = [OfflineModeIsEnabled]
    try:
        import httpx

        found.append(httpx.TransportError)  # connect, read, write, pool, timeouts, proxy
    except ImportError:
        pass
    try:
        import requests

        found += [requests.ConnectionError, requests.Timeout]
    except ImportError:
        pass
    return tuple(found)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
