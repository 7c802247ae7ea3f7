"""The dashboard: server-rendered pages (Jinja2, autoescaped) and one small script, all shipped
in this package (no CDN: it works offline). The pages read the same JSON API and WebSocket as
any client; the server renders what it knows at request time so a page is useful before its
script runs."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jinja2
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

from bashgym_api.jobs import JOB_FILE, read_json

HERE = Path(__file__).parent
ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,  # every value is escaped: job ids, reasons and rows are hostile text
    undefined=jinja2.StrictUndefined,
)
ENV.filters["tojson_attr"] = lambda v: json.dumps(v, default=str)


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


ENV.filters["age"] = _age


def render(name: str, **context: Any) -> HTMLResponse:
    return HTMLResponse(ENV.get_template(name).render(**context))


def routes(app: FastAPI) -> None:
    from bashgym_api.app import state  # (a cycle at import time otherwise)

    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @app.get("/", include_in_schema=False)
    async def index(request: Request) -> HTMLResponse:
        st = state(request)
        jobs = await asyncio.to_thread(lambda: [st.jobs.summary(i) for i in st.jobs.ids()])

        def choices() -> tuple[list[dict[str, Any]], list[str]]:
            from bashgym_api.specs import describe_pipelines

            host, _ = st.plugins.get()
            return describe_pipelines(st.plugins), host.registry.names("sinks")

        try:
            pipelines, sinks = await asyncio.to_thread(choices)
            problem = None
        except Exception as exc:  # noqa: BLE001 -- the list still shows; the form says why not
            pipelines, sinks, problem = [], [], str(exc)
        return render("index.html", jobs=jobs, pipelines=pipelines, sinks=sinks, problem=problem)

    @app.get("/jobs/{job_id}", include_in_schema=False)
    async def job_page(request: Request, job_id: str) -> HTMLResponse:
        st = state(request)
        job_dir = st.jobs.dir(job_id)
        if read_json(job_dir / JOB_FILE).get("kind") == "orchestration":
            from bashgym_api import orchestration

            detail = await asyncio.to_thread(orchestration.detail, st, job_id)
            return render(
                "orchestration.html", job=detail, svg=orchestration.dag_svg(detail.get("tasks"))
            )
        detail = await asyncio.to_thread(st.jobs.detail, job_id)
        return render("job.html", job=detail)
