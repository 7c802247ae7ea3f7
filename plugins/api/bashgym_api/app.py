"""The FastAPI application: pipelines, jobs, orchestration jobs, the events WebSocket and the
dashboard, over the jobs root given to `create_app`.

Every answer that is not a success is `{"detail": "<one line>"}` with its status: 404 an
unknown pipeline or job, 409 a job in the wrong state for the request, 422 a bad spec or
options, 501 a command this installation lacks. Work that could crash or hang (runs, previews,
orchestration) happens in child processes; the server only reads their directories.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request, WebSocket, WebSocketDisconnect
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from starlette.middleware.cors import CORSMiddleware

from bashgym import __version__
from bashgym.settings import ENV_VAR_NAME
from bashgym_api import orchestration, procs
from bashgym_api.auth import TokenAuth
from bashgym_api.body import JsonBody
from bashgym_api.commands import Commands
from bashgym_api.jobs import (
    EVENTS_FILE,
    JOB_FILE,
    LOG_FILE,
    JobError,
    Jobs,
    log_tail,
    read_json,
    write_json,
)
from bashgym_api.specs import PIPELINE_KEYS, Plugins, describe_pipelines, pipeline_spec, run_spec
from bashgym_api.tail import Hub, at_line_start, message

PUSH_FILE, PUSH_LOG = "push.json", "push.log"  # a job's last push: pid, repo, exit code; output
PUSH_KEYS = ("repo", "token_env", "private")
PREVIEW_KEYS = ("options", *PIPELINE_KEYS)  # what pipeline_spec reads
VALIDATE_KEYS = ("pipeline", "config", "format", *PREVIEW_KEYS)
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass
class ServerConfig:
    """What one server serves: its jobs root, its token (None: no token asked) and options."""

    jobs_root: Path
    token: str | None = None
    cors_origins: list[str] = field(default_factory=list)
    allow_plugin_files: bool = False
    cancel_grace_s: float = 10.0
    child_env: dict[str, str] | None = None
    push_token_envs: list[str] = field(default_factory=lambda: ["HF_TOKEN"])


@dataclass
class State:
    config: ServerConfig
    jobs: Jobs
    plugins: Plugins
    hub: Hub
    commands: Commands
    validate_lock: asyncio.Lock


def create_app(config: ServerConfig) -> FastAPI:
    """The API and dashboard; jobs found again from `config.jobs_root` (nothing in memory)."""
    jobs = Jobs(config.jobs_root, grace_s=config.cancel_grace_s, env=config.child_env)
    plugins = Plugins()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        app.state.bashgym = State(config, jobs, plugins, Hub(), Commands(plugins), asyncio.Lock())
        loading = asyncio.create_task(asyncio.to_thread(_preload, plugins))
        yield
        loading.cancel()

    app = FastAPI(
        title="BashGym",
        version=__version__,
        description="Pipeline runs and orchestration jobs over HTTP, live over WebSocket.",
        lifespan=lifespan,
    )
    if config.token:
        app.add_middleware(TokenAuth, token=config.token)
    # added last, so outermost: a browser's CORS preflight (which carries no token) is
    # answered before the token is asked for
    if config.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=config.cors_origins, allow_methods=["*"],
            allow_headers=["*"], allow_credentials=True,
        )  # fmt: skip

    @app.exception_handler(JobError)
    async def _job_error(request: Request, exc: JobError) -> JSONResponse:
        return JSONResponse({"detail": exc.message}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = []
        for err in exc.errors():
            if err.get("type") == "json_invalid":  # loc is ("body", character offset)
                at = err.get("loc", ("body", "?"))[-1]
                why = (err.get("ctx") or {}).get("error") or err.get("msg")
                problems.append(f"request body is not valid JSON (at character {at}): {why}")
                continue
            where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where}: {err.get('msg')}")
        return JSONResponse({"detail": "; ".join(problems) or "bad request"}, status_code=422)

    _api_routes(app)
    orchestration.routes(app)
    from bashgym_api.dashboard import routes as dashboard_routes  # jinja2: pages only

    dashboard_routes(app)
    return app


def _preload(plugins: Plugins) -> None:
    with contextlib.suppress(Exception):  # a problem is reported by the request that needs it
        plugins.get()


def state(request: Request | WebSocket) -> State:
    return request.app.state.bashgym  # type: ignore[no-any-return]


def _api_routes(app: FastAPI) -> None:
    @app.get("/api/health", tags=["server"])
    async def health(request: Request) -> dict[str, Any]:
        """The server is up; where its jobs are."""
        return {"ok": True, "version": __version__, "jobs_root": str(state(request).jobs.root)}

    @app.get("/api/pipelines", tags=["pipelines"])
    async def pipelines(request: Request) -> list[dict[str, Any]]:
        """Every installed pipeline: description, output format, seed needs, options schema."""
        return await asyncio.to_thread(describe_pipelines, state(request).plugins)

    @app.post("/api/pipelines/{name}/preview", tags=["pipelines"])
    async def preview(request: Request, name: str, body: JsonBody = None) -> StreamingResponse:
        """Generate a few rows with the pipeline (nothing written): JSON lines, one message
        each (`heartbeat`, `log`, `record`, `summary`, `error`), streamed as they come."""
        st, body = state(request), body or {}
        known_keys(body, PREVIEW_KEYS, "a preview request")
        n = body.get("num_records", 5)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 100:
            raise JobError(422, "num_records: a whole number from 1 to 100")
        resolved = await asyncio.to_thread(pipeline_spec, name, body, st.plugins)
        doc = json.loads(resolved.spec.model_dump_json())
        return StreamingResponse(
            _preview_lines({"spec": _run_file_doc(doc), "num_records": n}, st.config.child_env),
            media_type="application/x-ndjson",
        )

    @app.post("/api/validate", tags=["pipelines"])
    async def validate(request: Request, body: JsonBody = None) -> dict[str, Any]:
        """Check a pipeline with options (`{"pipeline": NAME, "options": {...}}`) or a
        DataDesigner config file's content (`{"config": TEXT, "format": "yaml"|"json"}`)
        without calling a model: `valid`, columns, and every problem on one line."""
        st, body = state(request), body or {}
        known_keys(body, VALIDATE_KEYS, "a validate request")
        async with st.validate_lock:  # DataDesigner's validation redirects stdout: one at a time
            return await asyncio.to_thread(_validate, body, st.plugins)

    @app.get("/api/jobs", tags=["jobs"])
    async def list_jobs(request: Request) -> list[dict[str, Any]]:
        """Every job found under the jobs root, newest first."""
        jobs = state(request).jobs
        return await asyncio.to_thread(lambda: [jobs.summary(i) for i in jobs.ids()])

    @app.post("/api/jobs", status_code=201, tags=["jobs"])
    async def create_job(request: Request, spec: JsonBody = None) -> dict[str, Any]:
        """Start a run: the body is a run spec (the fields of a run file, as JSON)."""
        st = state(request)
        checked = await asyncio.to_thread(
            run_spec, spec, st.plugins, allow_plugin_files=st.config.allow_plugin_files
        )
        job_dir = st.jobs.new_dir(checked.label, "run", {"spec": spec})
        (job_dir / "job.toml").write_text(checked.spec.to_toml())
        argv = [*procs.bashgym_argv(), "run", str(job_dir / "job.toml"), "--out", str(job_dir)]
        st.jobs.launch(job_dir, argv)
        return {"id": job_dir.name, "status": "starting", "url": f"/api/jobs/{job_dir.name}"}

    @app.get("/api/jobs/{job_id}", tags=["jobs"])
    async def get_job(request: Request, job_id: str) -> dict[str, Any]:
        """Status, counts, dropped by reason, usage, cost, timings, progress, outputs."""
        jobs = state(request).jobs
        if read_json(jobs.dir(job_id) / JOB_FILE).get("kind") == "orchestration":
            return await asyncio.to_thread(orchestration.detail, state(request), job_id)
        return await asyncio.to_thread(jobs.detail, job_id)

    @app.get("/api/jobs/{job_id}/rows", tags=["jobs"])
    async def rows(
        request: Request,
        job_id: str,
        which: str = Query("kept", pattern="^(kept|dropped)$"),
        offset: int = Query(0, ge=0),
        limit: int = Query(50, ge=1, le=1000),
    ) -> dict[str, Any]:
        """A page of the kept rows, or of the dropped ones with who dropped each and why."""
        return await asyncio.to_thread(state(request).jobs.rows, job_id, which, offset, limit)

    @app.get("/api/jobs/{job_id}/log", tags=["jobs"])
    async def job_log(request: Request, job_id: str, lines: int = Query(50, ge=1, le=2000)):
        """The last lines of the job's process output."""
        job_dir = state(request).jobs.dir(job_id)
        return {"log": log_tail(job_dir / LOG_FILE, lines)}

    @app.delete("/api/jobs/{job_id}", tags=["jobs"])
    async def cancel_job(request: Request, job_id: str) -> dict[str, Any]:
        """SIGTERM the job: its run records itself interrupted and can resume; status
        `cancelled`."""
        return await asyncio.to_thread(state(request).jobs.cancel, job_id)

    @app.post("/api/jobs/{job_id}/resume", tags=["jobs"])
    async def resume_job(request: Request, job_id: str) -> dict[str, Any]:
        """Run a cancelled, interrupted or failed job again from where it stopped."""
        jobs = state(request).jobs
        if read_json(jobs.dir(job_id) / JOB_FILE).get("kind") == "orchestration":
            raise JobError(409, f"job {job_id!r} is an orchestration: POST "
                           f"/api/orchestrations/{job_id}/resume")  # fmt: skip
        return await asyncio.to_thread(jobs.resume, job_id)

    @app.post("/api/jobs/{job_id}/push", status_code=202, tags=["jobs"])
    async def push_job(request: Request, job_id: str, body: JsonBody = None) -> dict[str, Any]:
        """Push the job's dataset to the Hugging Face Hub (`bashgym push RUN_DIR --repo ID`)."""
        st, body = state(request), body or {}
        job_dir = st.jobs.dir(job_id)
        if "token" in body:
            raise JobError(
                422, "token: a push request never carries the token; the server reads it "
                "from its env var named by 'token_env' (default HF_TOKEN)",
            )  # fmt: skip
        known_keys(body, PUSH_KEYS, "a push request")
        repo = body.get("repo")
        if not isinstance(repo, str) or not REPO_ID.match(repo):
            raise JobError(422, "repo: the Hub dataset id to push to, e.g. 'user/name'")
        if not isinstance(body.get("private", True), bool):
            raise JobError(422, "private: true (the default) or false")
        token_env = _push_token_env(body.get("token_env", "HF_TOKEN"), st.config)
        if st.jobs.status(job_dir) != "ok":
            raise JobError(409, f"job {job_id!r} has not finished with rows: nothing to push")
        if procs.alive(read_json(job_dir / PUSH_FILE).get("pid"), str(job_dir)):
            raise JobError(409, f"job {job_id!r} is being pushed already")
        await asyncio.to_thread(st.commands.require, ["push"])
        visibility = "--public" if body.get("private") is False else "--private"
        argv = [*procs.bashgym_argv(), "push", str(job_dir), "--repo", repo,
                "--token-env", token_env, visibility]  # fmt: skip
        (job_dir / PUSH_LOG).write_text("")

        def ended(code: int) -> None:
            write_json(job_dir / PUSH_FILE, {**read_json(job_dir / PUSH_FILE), "exit_code": code})

        pid = procs.start(argv, job_dir / PUSH_LOG, env=st.config.child_env, on_exit=ended)
        write_json(job_dir / PUSH_FILE, {"pid": pid, "repo": repo, "argv": argv})
        return {"id": job_id, "pushing": True, "repo": repo}

    @app.get("/api/jobs/{job_id}/push", tags=["jobs"])
    async def push_status(request: Request, job_id: str) -> dict[str, Any]:
        """The job's last push: running, its exit code when it ended (null: unknown or not
        yet), and its output."""
        job_dir = state(request).jobs.dir(job_id)
        push = read_json(job_dir / PUSH_FILE)
        if not push:
            raise JobError(404, f"job {job_id!r} was never pushed")
        return {
            "repo": push.get("repo"),
            "running": procs.alive(push.get("pid"), str(job_dir)),
            "exit_code": push.get("exit_code"),
            "log": log_tail(job_dir / PUSH_LOG, 50),
        }

    @app.get("/api/jobs/{job_id}/events", tags=["jobs"])
    async def events(request: Request, job_id: str, offset: int = Query(0, ge=0)) -> JSONResponse:
        """The job's events after byte `offset` (what the WebSocket streams), at once."""
        from bashgym_api.tail import read_from

        jobs = state(request).jobs
        path = jobs.run_dir(jobs.dir(job_id)) / EVENTS_FILE
        if not at_line_start(path, offset):
            raise JobError(422, f"offset {offset} is not the start of a line of events.jsonl")
        lines, end = await asyncio.to_thread(read_from, path, offset)
        text = message(lines) if lines else json.dumps({"offset": end, "events": []})
        return JSONResponse(json.loads(text))

    @app.websocket("/ws/jobs/{job_id}")
    async def job_events(websocket: WebSocket, job_id: str, offset: str = "0") -> None:
        """Every event of the job after byte `offset`: first those already written, then live
        ones, as `{"offset": N, "events": [...]}` messages (reconnect with the last N); when
        the job's process is gone and all is sent: `{"end": true, "status": ..., "offset":
        N}`, then the socket closes."""
        st = state(websocket)
        # accepted before any refusal: a close before accept() reaches the client as a bare
        # HTTP 403 (the ASGI server's answer), its code and reason lost; after it, the client
        # (a browser's CloseEvent too) reads 4404 or 4422 and the one-line reason
        await websocket.accept()
        try:
            job_dir = st.jobs.dir(job_id)
        except JobError as exc:
            await websocket.close(code=4404, reason=_close_reason(exc.message))
            return
        path = st.jobs.run_dir(job_dir) / EVENTS_FILE
        start = int(offset) if offset.isdecimal() else -1  # checked here, not by FastAPI: its
        if start < 0 or not at_line_start(path, start):  # refusal would come before accept()
            why = f"offset {offset[:40]!r} is not the start of a line of events.jsonl"
            await websocket.close(code=4422, reason=_close_reason(why))
            return
        sent = start
        try:
            async for batch in st.hub.stream(path, start, lambda: not st.jobs.running(job_dir)):
                await websocket.send_text(batch.text)
                sent = batch[-1][0]
            status = await asyncio.to_thread(st.jobs.status, job_dir)
            await websocket.send_text(json.dumps({"end": True, "status": status, "offset": sent}))
            await websocket.close()
        except WebSocketDisconnect:
            return

    @app.get("/jobs/{job_id}/report.html", include_in_schema=False)
    async def report(request: Request, job_id: str) -> FileResponse:
        job_dir = state(request).jobs.dir(job_id)
        path = job_dir / "report.html"
        if not path.is_file():
            raise JobError(404, f"job {job_id!r} has no report.html (yet)")
        return FileResponse(path, media_type="text/html")


def known_keys(body: dict[str, Any], allowed: tuple[str, ...], what: str) -> None:
    """A 422 naming a key the endpoint does not read: a typo (or a field sent to the wrong
    endpoint) is said, not silently ignored, as a job spec's unknown key is."""
    unknown = [key for key in body if key not in allowed]
    if unknown:
        raise JobError(
            422, f"{unknown[0]}: unknown key in {what} (keys: {', '.join(allowed)})"
        )  # fmt: skip


def _push_token_env(name: Any, config: ServerConfig) -> str:
    """The env var a push may read its Hub token from: one `[api] push_token_envs` names (a
    caller must not have the server send any of its variables, PATH or a database password,
    as a bearer token), set in the server's environment (said now, not as a failed push)."""
    allowed = config.push_token_envs
    if not isinstance(name, str) or not ENV_VAR_NAME.match(name):
        raise JobError(422, "token_env: the NAME of the env var holding the Hub token")
    if name not in allowed:
        raise JobError(
            422, f"token_env: {name!r} is not a variable this server lets a push read (allowed: "
            f"{', '.join(allowed) or 'none'}; the [api] push_token_envs setting)",
        )  # fmt: skip
    env = config.child_env if config.child_env is not None else os.environ
    if not env.get(name):
        raise JobError(
            422, f"token_env: ${name} is not set in the server's environment: set it to a Hub "
            "token where the server starts, or send 'token_env' naming another allowed variable",
        )  # fmt: skip
    return name


def _close_reason(text: str) -> str:
    """`text` cut to what a WebSocket close frame carries (123 bytes of UTF-8)."""
    data = text.encode()
    return text if len(data) <= 123 else data[:120].decode(errors="ignore") + "..."


def _run_file_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """A RunSpec's JSON dump as a run file document (steps as {plugin, **options})."""
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if isinstance(value, dict) and "plugin" in value and "options" in value:
            out[key] = {"plugin": value["plugin"], **value["options"]}
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            out[key] = [{"plugin": v["plugin"], **v["options"]} for v in value]
        elif value not in (None, [], {}) and key not in ("out", "fresh"):
            out[key] = value
    return out


async def _preview_lines(
    request: dict[str, Any], env: dict[str, str] | None
) -> AsyncIterator[bytes]:
    """The preview child's JSON lines, passed on as they come; the child is stopped when the
    client goes away."""
    from bashgym_procs import astop, child_setup

    with tempfile.TemporaryDirectory(prefix="bashgym-api-preview-") as tmp:
        req = Path(tmp) / "request.json"
        req.write_text(json.dumps(request))
        err = (Path(tmp) / "stderr.log").open("wb")
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bashgym_api.preview_child", str(req),
            stdout=asyncio.subprocess.PIPE, stderr=err, stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True, preexec_fn=child_setup(), env=env,
        )  # fmt: skip
        said_end = False
        try:
            assert proc.stdout is not None
            async for line in proc.stdout:
                kind = json.loads(line).get("message_type") if line.strip() else None
                said_end = said_end or kind in ("summary", "error")
                yield line
            await proc.wait()
            if not said_end:
                err.flush()
                tail = log_tail(Path(tmp) / "stderr.log", 5) or f"exit code {proc.returncode}"
                yield (json.dumps({"message_type": "error", "message": tail}) + "\n").encode()
        finally:
            if proc.returncode is None:
                await astop(proc)
            err.close()


def _validate(body: dict[str, Any], plugins: Plugins) -> dict[str, Any]:
    from bashgym_commands_pipeline import prepare, validate

    from bashgym.contracts import InputError

    host, settings = plugins.get()
    with tempfile.TemporaryDirectory(prefix="bashgym-api-validate-") as tmp:
        if "config" in body:
            body = _config_body(body, Path(tmp), host)
        name = body.get("pipeline")
        if not isinstance(name, str) or not name:
            raise JobError(
                422, "name a 'pipeline' (with its 'options'), or send a DataDesigner config "
                "file's content as 'config'",
            )  # fmt: skip
        resolved = pipeline_spec(name, body, plugins)
        try:
            with prepare(resolved, host, settings, serve=False) as prepared:
                result = validate(prepared)
        except InputError as exc:
            raise JobError(422, str(exc)) from None
    return {
        "valid": result.ok,
        "columns": [vars(c) for c in result.columns],
        "problems": result.problems,
        "warnings": result.warnings,
    }


def _config_body(body: dict[str, Any], tmp: Path, host: Any) -> dict[str, Any]:
    """A config file's content as the pipeline that runs such files, given a copy of it."""
    text, fmt = body.get("config"), str(body.get("format") or "yaml").lower().lstrip(".")
    if not isinstance(text, str) or not text.strip():
        raise JobError(422, "config: the text of a DataDesigner config file (YAML or JSON)")
    suffix = f".{fmt}"
    for registered in host.registry.items["pipelines"].values():
        if suffix in getattr(registered.obj, "config_files", ()):
            path = tmp / f"config{suffix}"
            path.write_text(text)
            return {"pipeline": registered.name, "options": {"path": str(path)}}
    raise JobError(422, f"format: no installed pipeline runs {suffix} config files")
