"""Resume per question: a run killed (SIGKILL) in the middle of its second question keeps the
first one done in the run store, leaves no sandbox worker behind, and a later attempt works
only the unfinished question, asking the model nothing about the finished one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pandas as pd
import psutil
import pytest
from bashgym_pipelines_csv_triangulation.episodes import NAMESPACE
from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
from bashgym_pipelines_csv_triangulation.pipeline import CsvTriangulationPipeline
from bashgym_pipelines_csv_triangulation.profile import profile, read_csv
from bashgym_pipelines_csv_triangulation.questions import template_seed_rows
from bashgym_testing.server import Reply

from bashgym.plugins import PluginHost
from bashgym.store import RunStore

CHILD = textwrap.dedent(
    """
    import json, sys
    import pandas as pd
    from pathlib import Path
    from bashgym.contracts import RunContext, open_models
    from bashgym.plugins import PluginHost
    from bashgym.settings import load_settings
    from bashgym_pipelines_csv_triangulation.options import CsvTriangulationOptions
    from bashgym_pipelines_csv_triangulation.pipeline import CsvTriangulationPipeline

    run_dir, rows, options = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    settings = load_settings()
    host = PluginHost()
    models = open_models(settings, host.registry, host.hook)
    run = RunContext(run_dir=run_dir, settings=settings, models=models)
    options = CsvTriangulationOptions.model_validate_json(Path(options).read_text())
    CsvTriangulationPipeline().finalize(pd.read_json(rows), options, run)
    """
)


def workers_of(pool_root):
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(str(pool_root) in part for part in proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.mark.slow  # a second Python process importing litellm, then a resumed attempt
def test_a_killed_run_resumes_with_only_the_unfinished_question(
    scripted_models, scripted_teacher, shop, tmp_path
):
    rows = template_seed_rows(profile(shop, read_csv(shop)), ["aggregation"], 2, seed=0)
    frame = pd.DataFrame([{**r, "question": r["template_question"]} for r in rows])
    first, second = frame["question"]
    code = dict(zip(frame["question"], frame["code"], strict=True))
    teacher = scripted_teacher(code, {first: ["correct"], second: ["correct"]})
    slow = teacher.second
    teacher.second = lambda plan, q: Reply(slow(plan, q).text, delay=600 if q == second else 0)

    options = CsvTriangulationOptions(
        csv=str(shop), questions="templates", verbalize=False, consistency_runs=2,
        concurrency=1, sandbox={"workers": 2, "preload": ["pandas", "numpy"]},
    )  # fmt: skip
    run_dir = tmp_path / "run"
    (tmp_path / "rows.json").write_text(frame.to_json())
    (tmp_path / "options.json").write_text(options.model_dump_json())
    (tmp_path / "child.py").write_text(CHILD)
    child = subprocess.Popen(
        [sys.executable, str(tmp_path / "child.py"), str(run_dir),
         str(tmp_path / "rows.json"), str(tmp_path / "options.json")],
        cwd=scripted_models.env.workdir, start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # the killed child's sandbox scratch dirs
    )  # fmt: skip
    try:
        store, counts = None, {}
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and child.poll() is None:
            if store is None and (run_dir / "state.db").exists():
                store = RunStore(run_dir / "state.db")
            counts = store.counts(NAMESPACE) if store is not None else {}
            asked = [r for r in scripted_models.server.completions if second in str(r.body)]
            if counts.get("done") == 1 and len(asked) >= 2:  # mid-way through the second
                break
            time.sleep(0.2)
        assert child.poll() is None, "the child ended before it could be killed"
        assert counts == {"done": 1, "running": 1}
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    pool_root = run_dir / "csv-triangulation" / "sandbox"
    deadline = time.monotonic() + 10
    while workers_of(pool_root) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert workers_of(pool_root) == []  # the workers died with the run
    done_before = store.get(NAMESPACE, store.items(NAMESPACE, "done")[0].key).result
    assert done_before["question"] == first

    teacher.second = slow  # the model answers at once now
    before = len(scripted_models.server.completions)
    run = scripted_models.run_context(run_dir, registry=PluginHost().registry)
    with run.models:
        out = CsvTriangulationPipeline().finalize(frame, options, run).dataset
    again = scripted_models.server.completions[before:]
    assert again and all(second in json.dumps(r.body) for r in again)  # only the unfinished one
    assert list(out["question"]) == [first, second]
    kept = out.iloc[0]
    assert (kept["question_id"], kept["gold_trace"]) == (
        done_before["question_id"],
        done_before["gold_trace"],
    )  # the very row the killed attempt stored
    assert list(out["verified"]) == [True, True]
    assert run.store.counts(NAMESPACE) == {"done": 2}
