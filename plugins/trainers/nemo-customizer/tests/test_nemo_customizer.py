"""The nemo-customizer trainer against a scripted NeMo on 127.0.0.1: upload, job, poll, report;
and the three ways it can go wrong (credentials, a failed job, a job that outlasts the wait)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bashgym_trainers_nemo_customizer import (
    NemoAuthError,
    NemoCustomizerOptions,
    NemoCustomizerTrainer,
    NemoJobFailed,
)

from bashgym.plugins import PluginHost
from bashgym.settings import Settings

CONFIG = "meta/llama-3.2-1b-instruct@v1.0.0+A100"


def options(nemo, **more) -> NemoCustomizerOptions:
    return NemoCustomizerOptions(url=nemo.url, config=CONFIG, poll_s=0.01, **more)


def done(steps: int = 20) -> dict:
    losses = [{"step": s, "value": 2.0 - s / 20} for s in (5, 10, 20)]
    return {"status": "completed", "percentage_done": 100, "steps_completed": steps,
            "epochs_completed": 1, "metrics": {"keys": ["train_loss"],
                                               "metrics": {"train_loss": losses}}}  # fmt: skip


def test_registered_as_a_trainer() -> None:
    found = PluginHost().registry.get("trainers", "nemo-customizer").obj
    assert isinstance(found, NemoCustomizerTrainer)


def test_upload_job_poll_and_report(nemo, run_dir: Path, tmp_path: Path) -> None:
    nemo.statuses = [{"status": "pending"}, {"status": "running", "percentage_done": 50}, done()]
    out = tmp_path / "out"
    trained = NemoCustomizerTrainer().train(run_dir, out, options(nemo, epochs=2), Settings())
    repo = json.loads((out / "job.json").read_text())["dataset"]
    assert nemo.files[f"{repo}/training/training.jsonl"] == (
        run_dir / "nemo-jsonl" / "train.jsonl").read_text()  # fmt: skip
    assert f"{repo}/validation/validation.jsonl" in nemo.files
    assert nemo.datasets == [{"name": repo.split("/")[1], "namespace": "bashgym",
                              "files_url": f"hf://datasets/{repo}"}]  # fmt: skip
    (job,) = nemo.jobs
    assert job["config"] == CONFIG and job["hyperparameters"]["epochs"] == 2
    assert job["hyperparameters"]["lora"] == {"adapter_dim": 16}
    assert nemo.polls == 3
    assert trained.metrics["final_loss"] == 1.0 and trained.metrics["steps"] == 20
    assert trained.metrics["output_model"] == "bashgym/student@cust-1"
    assert json.loads((trained.adapter / "nemo-model.json").read_text())["job"] == "cust-1"
    assert "<polyline" in trained.report.read_text()
    # the same command again follows the finished job: no second upload or job
    NemoCustomizerTrainer().train(run_dir, out, options(nemo, epochs=2), Settings())
    assert len(nemo.jobs) == 1


def test_a_refused_token_is_one_line_naming_the_variable(
    nemo, run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nemo.token = "right"
    monkeypatch.setenv("NEMO_TOKEN", "wrong")
    with pytest.raises(NemoAuthError, match=r"HTTP 401.*\$NEMO_TOKEN"):
        NemoCustomizerTrainer().train(run_dir, tmp_path / "o", options(
            nemo, api_key_env="NEMO_TOKEN"), Settings())  # fmt: skip
    monkeypatch.setenv("NEMO_TOKEN", "right")
    nemo.statuses = [done()]
    trained = NemoCustomizerTrainer().train(
        run_dir, tmp_path / "o", options(nemo, api_key_env="NEMO_TOKEN"), Settings()
    )
    assert trained.metrics["job"] == "cust-1"
    assert "right" not in "".join(p.read_text() for p in (tmp_path / "o").rglob("*.json"))


def test_a_failed_job_says_why_and_a_rerun_starts_a_new_one(
    nemo, run_dir: Path, tmp_path: Path
) -> None:
    logs = [{"message": "created"}, {"message": "failed", "detail": "CUDA out of memory"}]
    nemo.statuses = [{"status": "failed", "status_logs": logs}]
    with pytest.raises(NemoJobFailed, match="cust-1 failed: CUDA out of memory"):
        NemoCustomizerTrainer().train(run_dir, tmp_path / "o", options(nemo), Settings())
    nemo.statuses, nemo.polls = [done()], 0
    NemoCustomizerTrainer().train(run_dir, tmp_path / "o", options(nemo), Settings())
    assert len(nemo.jobs) == 2


def test_a_job_that_outlasts_the_wait_is_followed_by_the_next_call(
    nemo, run_dir: Path, tmp_path: Path
) -> None:
    nemo.statuses = [{"status": "running", "percentage_done": 10}]
    with pytest.raises(NemoJobFailed, match="still running after"):
        NemoCustomizerTrainer().train(
            run_dir, tmp_path / "o", options(nemo, timeout_s=0.05), Settings()
        )
    nemo.statuses, nemo.polls = [done()], 0
    trained = NemoCustomizerTrainer().train(run_dir, tmp_path / "o", options(nemo), Settings())
    assert len(nemo.jobs) == 1 and trained.metrics["job"] == "cust-1"


def test_an_unset_key_variable_and_a_run_without_jsonl(nemo, tmp_path: Path, run_dir: Path) -> None:
    from bashgym.contracts import InputError

    with pytest.raises(InputError, match=r"\$NOPE_NOT_SET is not set"):
        NemoCustomizerTrainer().train(run_dir, tmp_path / "o", options(
            nemo, api_key_env="NOPE_NOT_SET"), Settings())  # fmt: skip
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "run.json").write_text("{}")
    with pytest.raises(InputError, match="--sink nemo-jsonl"):
        NemoCustomizerTrainer().train(tmp_path / "empty", tmp_path / "o", options(nemo), Settings())
