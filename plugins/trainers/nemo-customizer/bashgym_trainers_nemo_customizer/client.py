"""NeMo's services as this trainer calls them: the Data Store through its Hugging Face Hub API
(`HfApi(endpoint=DATASTORE/v1/hf)`, so uploads are huggingface_hub's, not hand-written), the
Entity Store's dataset registry and Customizer's job API (`/v1/customization/jobs`, plain REST
through httpx: the NeMo SDK is a large dependency for three calls). Every refusal becomes one
line: the service, the HTTP status and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from bashgym.contracts import InputError, RunStopped

TERMINAL = {"completed", "failed", "cancelled"}


class NemoAuthError(InputError):
    """A service refused the credentials (401/403)."""


class NemoJobFailed(RunStopped):
    """The customization job ended failed or cancelled (`state`), or outlasted the wait."""

    def __init__(self, message: str, state: str = "running") -> None:
        super().__init__(message)
        self.state = state


def _refusal(service: str, response: httpx.Response, key_env: str | None) -> Exception:
    code = response.status_code
    if code in (401, 403):
        how = f"check the token in ${key_env}" if key_env else "set trainer.api_key_env"
        return NemoAuthError(f"{service} refused the credentials (HTTP {code}): {how}")
    text = response.text.strip().replace("\n", " ")[:200]
    if code < 500:
        return InputError(f"{service} refused the request (HTTP {code}): {text}")
    return RunStopped(f"{service} failed (HTTP {code}): {text}")


class Nemo:
    def __init__(
        self,
        *,
        url: str,
        datastore_url: str,
        entity_store_url: str,
        token: str | None,
        key_env: str | None,
        timeout_s: float = 60.0,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(headers=headers, timeout=timeout_s)
        self.url, self.token, self.key_env = url.rstrip("/"), token, key_env
        self.datastore_url = datastore_url.rstrip("/")
        self.entity_store_url = entity_store_url.rstrip("/")

    def close(self) -> None:
        self.http.close()

    def _call(self, service: str, method: str, url: str, **kw: Any) -> dict[str, Any]:
        try:
            response = self.http.request(method, url, **kw)
        except httpx.HTTPError as exc:
            raise RunStopped(f"{service} at {url} did not answer: {exc}") from None
        if response.status_code == 409 and method == "POST":
            return {}  # already there (a dataset registered by an earlier attempt)
        if response.status_code >= 400:
            raise _refusal(service, response, self.key_env)
        try:
            body = response.json()
        except ValueError:
            raise RunStopped(f"{service} answered {url} with no JSON") from None
        return body if isinstance(body, dict) else {"items": body}

    def upload(self, repo_id: str, files: dict[str, Path]) -> str:
        """Put `files` (path in repo -> local file) in the Data Store's dataset `repo_id`."""
        from huggingface_hub import HfApi  # ~0.3 s: only when a dataset is uploaded
        from huggingface_hub.errors import HfHubHTTPError

        api = HfApi(endpoint=f"{self.datastore_url}/v1/hf", token=self.token or False)
        try:
            api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
            for in_repo, local in files.items():
                api.upload_file(
                    path_or_fileobj=str(local),
                    path_in_repo=in_repo,
                    repo_id=repo_id,
                    repo_type="dataset",
                )
        except HfHubHTTPError as exc:
            if exc.response is not None:
                raise _refusal("NeMo Data Store", exc.response, self.key_env) from None
            raise RunStopped(f"NeMo Data Store: {exc}") from None
        except httpx.HTTPError as exc:
            raise RunStopped(f"NeMo Data Store did not answer: {exc}") from None
        return f"hf://datasets/{repo_id}"

    def register_dataset(self, namespace: str, name: str, files_url: str) -> None:
        body = {"name": name, "namespace": namespace, "files_url": files_url}
        self._call("NeMo Entity Store", "POST", f"{self.entity_store_url}/v1/datasets", json=body)

    def create_job(self, body: dict[str, Any]) -> dict[str, Any]:
        job = self._call("NeMo Customizer", "POST", f"{self.url}/v1/customization/jobs", json=body)
        if not isinstance(job.get("id"), str):
            raise RunStopped(f"NeMo Customizer created a job without an id: {str(job)[:200]}")
        return job

    def status(self, job_id: str) -> dict[str, Any]:
        return self._call(
            "NeMo Customizer", "GET", f"{self.url}/v1/customization/jobs/{job_id}/status"
        )
