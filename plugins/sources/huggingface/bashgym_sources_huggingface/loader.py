"""Load a HuggingFace dataset (local folder, local file, or Hub id) into seed rows.

Why the care around the network: BashGym's main job runs with no network, and `datasets` left
to itself answers a Hub id on an offline machine with retries and a traceback about HTTP. So a
Hub id is only handed to `datasets` once the Hub is known to be reachable: offline mode
(`HF_HUB_OFFLINE` / `HF_DATASETS_OFFLINE`, read at call time) or an endpoint that does not
accept a TCP connection within a few seconds ends the run at once with one line that says what
to do instead. Local data never needs the Hub: a `save_to_disk` folder goes through
`load_from_disk`, a folder or file of parquet/json/csv through the packaged builders.
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from huggingface_hub import constants

from bashgym.contracts import InputError

if TYPE_CHECKING:  # datasets is heavy: imported when a run actually loads something
    import pandas as pd
    from datasets import Dataset, DatasetDict, IterableDataset

BUILDERS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}
BUILDERS |= {".arrow": "arrow", ".txt": "text"}
HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?$")
PROBE_TIMEOUT_S = 3.0
_TRUE = {"1", "true", "yes", "on"}


def only_local(path: str) -> bool:
    """Whether `path` can only mean a local dataset: it is no Hub id (`/data/x`, `~/x`, a path
    with two slashes) or it starts with `./` or `../` (a Hub name never starts with a dot).
    Such a path that is not there is a mistake to refuse before the run starts; a Hub id like
    `gsm8k` or `openai/gsm8k` is never looked for on disk first."""
    return path.startswith(("./", "../")) or not HUB_ID.match(path)


class HubUnavailableError(InputError):
    """A Hub id was asked for where the Hub cannot be reached."""


class DatasetInputError(InputError):
    """The dataset, split, subset or a mapped column does not exist."""


def load_frame(
    path: str,
    *,
    split: str = "train",
    subset: str | None = None,
    streaming: bool = False,
    limit: int | None = None,
    columns: list[str] | None = None,
    cache_dir: str | None = None,
) -> pd.DataFrame:
    """The rows of one split as a DataFrame (first `limit` rows; only `columns` when given)."""
    import pandas as pd  # ~0.5 s (measured): only when rows are read, not at every start-up

    local = Path(path).expanduser()
    if local.exists():
        data = _load_local(local, split, subset, streaming, cache_dir)
    else:
        data = _load_hub(path, split, subset, streaming, cache_dir)
    names = data.column_names
    if columns is not None and names is not None:
        missing = sorted(set(columns) - set(names))
        if missing:
            raise DatasetInputError(
                f"huggingface source: column(s) {missing} not in {path!r}; columns are {names}"
            )
        data = data.select_columns(columns)
    if streaming:
        stream = data.take(limit) if limit is not None else data
        return pd.DataFrame(list(stream))
    if limit is not None:
        data = data.select(range(min(limit, len(data))))
    return data.to_pandas()


# ------------------------------------------------------------------------------------ local


def _load_local(
    local: Path, split: str, subset: str | None, streaming: bool, cache_dir: str | None
) -> Dataset | IterableDataset:
    # ~0.7 s (measured): `datasets` only when a run loads something (the TYPE_CHECKING note)
    from datasets import load_dataset

    if subset is not None and (local / subset).is_dir():
        local, subset = local / subset, None  # configs kept as sub-folders (gsm8k's layout)
    if _saved_to_disk(local):
        if subset is not None:
            folders = sorted(p.name for p in local.iterdir() if p.is_dir())
            raise DatasetInputError(
                f"huggingface source: {local} was saved with save_to_disk and has no subset "
                f"{subset!r}; sub-folders are {folders}"
            )
        data = _pick_split(_guard(lambda: _from_disk(local)), split, str(local))
        return data.to_iterable_dataset() if streaming else data
    if local.is_file():
        builder = BUILDERS.get(local.suffix.lower())
        if builder is None:
            raise DatasetInputError(
                f"huggingface source: cannot load {local}: supported files are "
                f"{', '.join(sorted(BUILDERS))}, or a dataset folder"
            )
        return _guard(
            lambda: load_dataset(
                builder,
                data_files={split: str(local)},
                split=split,
                streaming=streaming,
                cache_dir=cache_dir,
            )
        )
    return _guard(
        lambda: load_dataset(
            str(local), name=subset, split=split, streaming=streaming, cache_dir=cache_dir
        )
    )


def _saved_to_disk(folder: Path) -> bool:
    return folder.is_dir() and (
        (folder / "dataset_dict.json").is_file()
        or ((folder / "state.json").is_file() and (folder / "dataset_info.json").is_file())
    )


def _from_disk(folder: Path) -> Dataset | DatasetDict:
    from datasets import load_from_disk  # (see _load_local)

    return load_from_disk(str(folder))


def _pick_split(data: Dataset | DatasetDict, split: str, where: str) -> Dataset:
    from datasets import DatasetDict  # (see _load_local)

    if not isinstance(data, DatasetDict):
        return data  # a single saved Dataset has no split names: it is the split
    if split not in data:
        raise DatasetInputError(
            f"huggingface source: no split {split!r} in {where}; splits are {list(data)}"
        )
    return data[split]


# ------------------------------------------------------------------------------------ hub


def _load_hub(
    name: str, split: str, subset: str | None, streaming: bool, cache_dir: str | None
) -> Dataset | IterableDataset:
    if only_local(name):
        raise DatasetInputError(
            f"huggingface source: {name!r} is neither a local dataset folder or file "
            "nor a Hub id like 'openai/gsm8k'"
        )
    why = hub_unavailable()
    if why:
        raise HubUnavailableError(
            f"cannot reach the HuggingFace Hub to load {name!r} ({why}). Use a local dataset "
            "folder, or run where the Hub is reachable."
        )
    from datasets import load_dataset  # (see _load_local)

    return _guard(
        lambda: load_dataset(
            name, name=subset, split=split, streaming=streaming, cache_dir=cache_dir
        ),
        hub_id=name,
    )


def hub_unavailable() -> str | None:
    """Why the Hub cannot be used now ("offline", "unreachable: ..."), or None if it can."""
    if any(os.environ.get(v, "").strip().lower() in _TRUE for v in _OFFLINE_VARS):
        return "offline"
    if constants.HF_HUB_OFFLINE:
        return "offline"
    if any(os.environ.get(v) for v in _PROXY_VARS):
        return None  # a direct probe says nothing about a proxied connection; let it try
    endpoint = urlparse(os.environ.get("HF_ENDPOINT") or constants.ENDPOINT)
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname or "", port), timeout=PROBE_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"unreachable: {endpoint.hostname}:{port}: {exc}"


_OFFLINE_VARS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def _guard(load: Any, hub_id: str | None = None) -> Any:
    """Run a `datasets` call, turning its errors about the user's input into one-line errors."""
    from datasets.exceptions import DatasetNotFoundError  # (see _load_local)

    try:
        return load()
    except DatasetNotFoundError as exc:
        raise DatasetInputError(
            f"huggingface source: no dataset {hub_id!r} on the Hub (or it is gated/private: "
            f"log in or set HF_TOKEN): {exc}"
        ) from exc
    except ConnectionError as exc:  # OfflineModeIsEnabled included
        raise HubUnavailableError(
            f"cannot reach the HuggingFace Hub to load {hub_id!r} (unreachable: {exc}). "
            "Use a local dataset folder, or run where the Hub is reachable."
        ) from exc
    except (ValueError, FileNotFoundError, KeyError) as exc:  # unknown split / config / files
        raise DatasetInputError(f"huggingface source: {exc}") from exc
    except Exception as exc:
        if hub_id is not None and type(exc).__module__.split(".")[0] in _HTTP_MODULES:
            raise HubUnavailableError(  # httpx / requests transport errors are not OSErrors
                f"cannot reach the HuggingFace Hub to load {hub_id!r} (unreachable: {exc}). "
                "Use a local dataset folder, or run where the Hub is reachable."
            ) from exc
        raise


_HTTP_MODULES = {"httpx", "httpcore", "requests", "urllib3"}
