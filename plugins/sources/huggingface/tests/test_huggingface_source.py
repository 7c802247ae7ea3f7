"""The huggingface source on local datasets (save_to_disk folders, parquet folders with subsets,
single files) with split/subset/map/columns/limit/streaming, and its fast, clear failure on a
Hub id when the Hub cannot be reached. The network is blocked in every test here."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bashgym_sources_huggingface.loader import DatasetInputError, HubUnavailableError
from bashgym_sources_huggingface.source import HuggingFaceOptions, HuggingFaceSource
from bashgym_testing.paths import options_with_path_gone
from datasets import Dataset, DatasetDict

from bashgym.contracts import RunContext
from bashgym.settings import Settings

TRAIN = {
    "question": ["What is 2+2?", "What is 3*3?", "What is 10-7?", "What is 8/2?"],
    "answer": ["4", "9", "3", "4"],
    "level": [1, 1, 2, 2],
}
TEST = {"question": ["What is 5+5?"], "answer": ["10"], "level": [1]}
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Fail any attempt to leave the machine (DNS or connect), so 'offline' is really offline."""
    real_connect, real_lookup = socket.socket.connect, socket.getaddrinfo

    def connect(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            raise AssertionError(f"a test tried to reach the network: {address}")
        return real_connect(self, address)

    def lookup(host, *args, **kwargs):
        if host not in LOOPBACK:
            raise AssertionError(f"a test tried to resolve {host!r}")
        return real_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", lookup)


@pytest.fixture
def run(tmp_path) -> RunContext:
    return RunContext(run_dir=tmp_path, settings=Settings())


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hf")
    train, test = Dataset.from_dict(TRAIN), Dataset.from_dict(TEST)
    DatasetDict({"train": train, "test": test}).save_to_disk(root / "saved")
    train.save_to_disk(root / "single")
    for subset, frame in (("main", train), ("socratic", test)):  # gsm8k-style config folders
        (root / "parquet" / subset).mkdir(parents=True)
        frame.to_parquet(root / "parquet" / subset / "train.parquet")
    test.to_parquet(root / "parquet" / "main" / "test.parquet")
    train.to_json(root / "rows.jsonl")
    return root


def read(run: RunContext, data: Path, **options):
    options.setdefault("cache_dir", str(data / "cache"))
    return HuggingFaceSource().open(HuggingFaceOptions(**options), run)


def test_save_to_disk_split_map_columns_limit(run, data):
    frame = read(run, data, path=str(data / "saved"))
    assert list(frame["question"]) == TRAIN["question"]
    assert list(frame["source_dataset"]) == [f"{data / 'saved'}[train]"] * 4
    assert list(frame["source_row"]) == [0, 1, 2, 3]
    test = read(run, data, path=str(data / "saved"), split="test")
    assert list(test["answer"]) == ["10"]
    mapped = read(
        run,
        data,
        path=str(data / "saved"),
        map={"prompt": "question", "reference": "answer"},
        columns=["prompt", "reference"],
        limit=2,
        provenance=False,
    )
    assert mapped.to_dict(orient="records") == [
        {"prompt": "What is 2+2?", "reference": "4"},
        {"prompt": "What is 3*3?", "reference": "9"},
    ]
    single = read(run, data, path=str(data / "single"), limit=3, streaming=True)
    assert list(single["level"]) == [1, 1, 2]


def test_parquet_folder_with_subset_split_and_streaming(run, data):
    main = read(run, data, path=str(data / "parquet"), subset="main", split="test")
    assert list(main["question"]) == TEST["question"]
    assert main["source_dataset"][0] == f"{data / 'parquet'}:main[test]"
    socratic = read(run, data, path=str(data / "parquet"), subset="socratic")
    assert list(socratic["answer"]) == ["10"]
    streamed = read(
        run, data, path=str(data / "parquet" / "main"), streaming=True, limit=2,
        map={"prompt": "question"}, columns=["prompt"],
    )  # fmt: skip
    assert list(streamed["prompt"]) == TRAIN["question"][:2]
    sliced = read(run, data, path=str(data / "parquet" / "main"), split="train[1:3]")
    assert list(sliced["answer"]) == ["9", "3"]


def test_single_file(run, data):
    frame = read(run, data, path=str(data / "rows.jsonl"), limit=1)
    assert frame.to_dict(orient="records")[0]["question"] == "What is 2+2?"


def test_bad_local_input_is_a_clear_error(run, data):
    with pytest.raises(
        DatasetInputError, match=r"no split 'validation' .*splits are \['train', 'test'\]"
    ):
        read(run, data, path=str(data / "saved"), split="validation")
    with pytest.raises(DatasetInputError, match=r"Unknown split \"validation\""):
        read(run, data, path=str(data / "parquet" / "main"), split="validation")
    with pytest.raises(DatasetInputError, match=r"column\(s\) \['nope'\] not"):
        read(run, data, path=str(data / "saved"), map={"prompt": "nope"})
    with pytest.raises(DatasetInputError, match=r"column\(s\) \['nope'\] not"):
        read(run, data, path=str(data / "saved"), columns=["nope"])
    with pytest.raises(DatasetInputError, match="saved with save_to_disk and has no subset 'x'"):
        read(run, data, path=str(data / "saved"), subset="x")
    with pytest.raises(ValueError, match="must name a Hub id"):
        HuggingFaceOptions(path=" ")


@pytest.mark.parametrize("given", ["/missing/deep/dir", "~/missing-dataset", "./missing", "../x"])
def test_a_path_that_can_only_be_local_and_is_not_there_is_refused_with_the_options(
    given, tmp_path, monkeypatch
):
    """Before a run folder exists (exit 2 through the CLI): no Hub id starts with `/`, `~` or
    a dot, or has two slashes."""
    (tmp_path / "here").mkdir()  # a folder whose parent holds no `x` (`/tmp/x` may well exist)
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(ValueError, match="path\n  does not exist, and is not a Hub id like"):
        HuggingFaceOptions(path=given)


@pytest.mark.parametrize("given", ["openai/gsm8k", "gsm8k", "data/train.parquet", "my.data"])
def test_a_hub_id_is_never_looked_for_on_disk_by_the_options(given):
    assert HuggingFaceOptions(path=given).path == given  # (none of them exists here)


def test_a_local_path_gone_when_the_source_opens_is_the_same_error(run, tmp_path, monkeypatch):
    options = options_with_path_gone(HuggingFaceOptions, tmp_path / "gone")
    with pytest.raises(DatasetInputError, match="neither a local dataset folder or file nor a Hub"):
        HuggingFaceSource().open(options, run)
    # `../x` is local too (no Hub name starts with a dot): never asked of the Hub, gone or not
    dotted = tmp_path / "dotted"
    dotted.mkdir()
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    options = HuggingFaceOptions(path="../dotted")
    dotted.rmdir()
    with pytest.raises(DatasetInputError, match="neither a local dataset folder"):
        HuggingFaceSource().open(options, run)


def test_hub_id_offline_fails_fast_with_a_clear_message(run, data, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    started = time.monotonic()
    with pytest.raises(HubUnavailableError) as err:
        read(run, data, path="openai/gsm8k", subset="main")
    assert time.monotonic() - started < 2
    assert str(err.value) == (
        "cannot reach the HuggingFace Hub to load 'openai/gsm8k' (offline). Use a local dataset "
        "folder, or run where the Hub is reachable."
    )


def test_hub_id_unreachable_fails_fast(run, data, monkeypatch):
    from huggingface_hub import constants

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HTTPS_PROXY", "https_proxy",
                 "ALL_PROXY", "all_proxy"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with socket.socket() as probe:  # a loopback port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(
        HubUnavailableError, match=rf"'openai/gsm8k' \(unreachable: 127.0.0.1:{port}"
    ):
        read(run, data, path="openai/gsm8k")
    assert time.monotonic() - started < 5


def test_cli_run_reads_a_local_dataset(bashgym_cli, bashgym_env, data, monkeypatch):
    out = bashgym_env.workdir / "out"
    result = bashgym_cli(
        "run", "--source", "huggingface", "--set", f"source.path={data / 'parquet'}",
        "--set", "source.subset=main", "--set", "source.map.prompt=question",
        "--set", 'source.columns=["prompt", "answer"]', "--set", "source.limit=3",
        "--set", f"source.cache_dir={data / 'cache'}", "--sink", "parquet", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "data.parquet").to_pandas()
    assert list(table.columns) == ["prompt", "answer", "source_dataset", "source_row"]
    assert list(table["prompt"]) == TRAIN["question"][:3]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    offline = bashgym_cli(
        "run", "--source", "huggingface", "--set", "source.path=openai/gsm8k",
        "--sink", "parquet", "--out", bashgym_env.workdir / "offline",
    )  # fmt: skip
    assert offline.exit_code == 2
    assert "cannot reach the HuggingFace Hub to load 'openai/gsm8k' (offline)" in offline.output
