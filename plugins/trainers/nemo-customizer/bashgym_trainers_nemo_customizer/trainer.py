"""The `nemo-customizer` Trainer: the run's JSONL to NeMo's Data Store, a customization job,
polled until it ends, its figures reported.

Resumable: `job.json` under OUT keeps the job's id with what it was made from, so the same
command again (after a kill, or a poll that timed out) polls that job instead of starting
another. The adapter stays in NeMo (it is the job's `output_model`, served by a NIM):
OUT/adapter/nemo-model.json says which.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bashgym.contracts import InputError, Trained, Trainer
from bashgym.settings import Settings
from bashgym_trainers_nemo_customizer.client import TERMINAL, Nemo, NemoJobFailed
from bashgym_trainers_nemo_customizer.options import NemoCustomizerOptions
from bashgym_trainers_nemo_customizer.report import write_report

SPLITS = {"train.jsonl": "training/training.jsonl", "val.jsonl": "validation/validation.jsonl"}


def run_files(run_dir: Path) -> dict[str, Path]:
    """The run's train/val JSONL by their place in the dataset repo (from run.json's outputs,
    else beside it); InputError when the run wrote no train.jsonl."""
    summary_file = Path(run_dir) / "run.json"
    if not summary_file.is_file():
        raise InputError(f"{run_dir} is not a run directory (no run.json)")
    try:
        outputs = json.loads(summary_file.read_text(encoding="utf-8")).get("outputs") or {}
    except (ValueError, AttributeError):
        raise InputError(f"{summary_file} is not a run's summary") from None
    named = [
        Path(p)
        for ps in outputs.values()
        if isinstance(ps, list)
        for p in ps
        if isinstance(p, str) and Path(p).name in SPLITS
    ]
    named = [p if p.is_file() else Path(run_dir) / p.parent.name / p.name for p in named]
    found = {SPLITS[p.name]: p for p in named if p.is_file()}
    if SPLITS["train.jsonl"] not in found:
        raise InputError(f"{run_dir}: the run wrote no train.jsonl (run it with --sink nemo-jsonl)")
    return found


def identity(options: NemoCustomizerOptions, files: dict[str, Path]) -> str:
    digest = hashlib.sha256(
        json.dumps(options.model_dump(exclude={"poll_s", "timeout_s"}), sort_keys=True).encode()
    )
    for name, path in sorted(files.items()):
        digest.update(name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def job_body(options: NemoCustomizerOptions, dataset: str) -> dict[str, Any]:
    hyper: dict[str, Any] = {
        "training_type": options.training_type,
        "finetuning_type": options.finetuning_type,
        "epochs": options.epochs,
        "batch_size": options.batch_size,
        "learning_rate": options.learning_rate,
    }
    if options.finetuning_type == "lora":
        hyper["lora"] = {"adapter_dim": options.adapter_dim}
    body: dict[str, Any] = {
        "config": options.config,
        "dataset": {"name": dataset, "namespace": options.namespace},
        "hyperparameters": hyper,
    }
    if options.output_model:
        body["output_model"] = options.output_model
    return body


class NemoCustomizerTrainer(Trainer[NemoCustomizerOptions]):
    """Upload to the NeMo Data Store, run a NeMo Customizer job, report it."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self.sleep = sleep

    def train(
        self, run_dir: Path, out_dir: Path, options: NemoCustomizerOptions, settings: Settings
    ) -> Trained:
        files = run_files(run_dir)
        token = None
        if options.api_key_env:
            token = os.environ.get(options.api_key_env)
            if not token:
                raise InputError(
                    f"${options.api_key_env} is not set (trainer.api_key_env names it)"
                )
        out_dir.mkdir(parents=True, exist_ok=True)
        nemo = Nemo(
            url=options.url,
            datastore_url=options.datastore_url or options.url,
            entity_store_url=options.entity_store_url or options.url,
            token=token,
            key_env=options.api_key_env,
        )
        try:
            job_id = self._job(nemo, run_dir, out_dir, options, files)
            try:
                status = self._wait(nemo, job_id, options)
            except NemoJobFailed as exc:
                if exc.state in ("failed", "cancelled"):  # the next call starts a new job
                    saved = json.loads((out_dir / "job.json").read_text())
                    (out_dir / "job.json").write_text(json.dumps({**saved, "status": exc.state}))
                raise
        finally:
            nemo.close()
        return self._report(out_dir, job_id, status, options)

    def _job(
        self,
        nemo: Nemo,
        run_dir: Path,
        out_dir: Path,
        options: NemoCustomizerOptions,
        files: dict[str, Path],
    ) -> str:
        """The job to follow: the one job.json names for the same data and options, else new."""
        ident = identity(options, files)
        saved = out_dir / "job.json"
        if saved.is_file():
            before = json.loads(saved.read_text())
            if before.get("identity") == ident and before.get("status") not in (
                "failed",
                "cancelled",
            ):
                say(f"following job {before['id']} again")
                return str(before["id"])
        dataset = options.dataset or f"bashgym-{Path(run_dir).resolve().name}-{ident[:8]}"
        repo = f"{options.namespace}/{dataset}"
        say(f"uploading {len(files)} file(s) to the Data Store as {repo}")
        files_url = nemo.upload(repo, files)
        nemo.register_dataset(options.namespace, dataset, files_url)
        job = nemo.create_job(job_body(options, dataset))
        record = {
            "id": job["id"],
            "identity": ident,
            "dataset": repo,
            "output_model": job.get("output_model"),
            "status": job.get("status"),
        }
        saved.write_text(json.dumps(record, indent=1))
        say(f"created customization job {job['id']}")
        return str(job["id"])

    def _wait(self, nemo: Nemo, job_id: str, options: NemoCustomizerOptions) -> dict[str, Any]:
        deadline = time.monotonic() + options.timeout_s
        last = None
        while True:
            status = nemo.status(job_id)
            state = str(status.get("status", "unknown"))
            shown = (state, status.get("percentage_done"), status.get("steps_completed"))
            if shown != last:
                say(
                    f"job {job_id}: {state}, {status.get('percentage_done', '?')}% done, "
                    f"{status.get('steps_completed', '?')} steps"
                )
                last = shown
            if state in TERMINAL:
                break
            if time.monotonic() >= deadline:
                raise NemoJobFailed(
                    f"job {job_id} still {state} after {options.timeout_s:g} s; the same "
                    "command again keeps polling it"
                )
            self.sleep(options.poll_s)
        if state != "completed":
            logs = status.get("status_logs") or []
            why = next(
                (
                    str(x.get("detail") or x.get("message"))
                    for x in reversed(logs)
                    if isinstance(x, dict) and (x.get("detail") or x.get("message"))
                ),
                "no reason given",
            )
            raise NemoJobFailed(f"customization job {job_id} {state}: {why}", state)
        return status

    def _report(
        self, out_dir: Path, job_id: str, status: dict[str, Any], options: NemoCustomizerOptions
    ) -> Trained:
        saved = json.loads((out_dir / "job.json").read_text())
        saved["status"] = "completed"
        (out_dir / "job.json").write_text(json.dumps(saved, indent=1))
        series = (status.get("metrics") or {}).get("metrics") or {}
        points = [
            {"step": p["step"], key: p["value"]}
            for key in ("train_loss", "val_loss")
            for p in series.get(key) or []
            if isinstance(p, dict) and "step" in p
        ]
        losses = [p["train_loss"] for p in points if "train_loss" in p]
        vals = [p["val_loss"] for p in points if "val_loss" in p]
        metrics = {
            "job": job_id,
            "output_model": saved.get("output_model"),
            "config": options.config,
            "steps": status.get("steps_completed"),
            "epochs": status.get("epochs_completed"),
            "elapsed_s": status.get("elapsed_time"),
            "first_loss": losses[0] if losses else None,
            "final_loss": losses[-1] if losses else None,
            "val_loss": vals[-1] if vals else None,
        }
        adapter = out_dir / "adapter"
        adapter.mkdir(exist_ok=True)
        (adapter / "nemo-model.json").write_text(
            json.dumps(
                {
                    "output_model": saved.get("output_model"),
                    "job": job_id,
                    "served_by": "a NIM "
                    "of the base model with this adapter (NeMo Deployment Management)",
                },
                indent=1,
            )
        )
        report = write_report(out_dir, points, metrics)
        return Trained(adapter=adapter, metrics=metrics, report=report)


def say(text: str) -> None:
    print(f"bashgym train: {text}", file=sys.stderr, flush=True)
