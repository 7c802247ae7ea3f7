"""The warm sandbox against the attack list, in every environment installed here: each attack
is contained (the worker survives or is restarted) and reported with its reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bashgym_pipelines_csv_triangulation.protocol import marker


async def cells(pool, *codes):
    async with pool.episode() as episode:
        return [await episode.run(code) for code in codes]


def test_a_cell_sees_df_and_submits_through_the_protocol(sandbox):
    async def body(pool):
        return await cells(
            pool,
            "total = df.revenue.sum()\nprint(df.shape)",
            "int(df.units.max())",
            "hook(total, name='total')\nsubmit(df.groupby('region').units.sum())",
        )

    first, shown, second = sandbox(body)
    assert shown.status == "ok" and shown.output == "20\n"  # a last expression is shown,
    assert not shown.submitted  # as in a notebook, and is not an answer
    assert first.status == "ok" and first.output.strip() == "(24, 6)"
    assert second.submitted and second.answer_type == "dict"
    assert second.answer == {"East": 56, "North": 67, "South": 59, "West": 70}
    assert second.hooks == [{"name": "total", "value": 1507.81}]
    assert "<<bashgym" not in second.output  # markers are taken out of the output


def test_an_infinite_loop_stops_at_the_cpu_limit_and_the_worker_goes_on(sandbox):
    async def body(pool):
        looped = await cells(pool, "while True:\n    pass")
        after = await cells(pool, "submit(1)")
        return looped[0], after[0], pool.restarts

    # The wall clock is far off: on a loaded machine 1 CPU second can take many wall seconds.
    looped, after, restarts = sandbox(body, wall_s=300)
    assert looped.status == "cpu"
    assert "CPU time limit (1 s)" in looped.error
    assert after.submitted and after.answer == 1
    assert restarts == 0  # the warm worker survived; only the episode's cell was stopped


def test_a_sleeping_cell_stops_at_the_wall_clock_limit_and_loses_its_variables(sandbox):
    async def body(pool):
        return await cells(pool, "x = 1", "import time\ntime.sleep(60)", "print(x)")

    _, slept, after = sandbox(body, wall_s=2)
    assert slept.status == "timeout"
    assert slept.error == "wall-clock limit (2 s) reached"
    assert after.restarted and after.status == "error"
    assert "NameError" in after.error


def test_a_memory_bomb_is_refused_and_reported(sandbox):
    async def body(pool):
        return await cells(pool, "hog = bytearray(2 * 1024**3)", "submit(len(df))")

    bomb, after = sandbox(body, memory_mb=200)
    assert bomb.status == "memory"
    assert bomb.error == "memory limit (200 MB) reached"
    assert after.submitted and after.answer == 24


def test_huge_output_is_cut_and_capped(sandbox):
    async def body(pool):
        return await cells(pool, "print('y' * 10_000)", "while True:\n    print('x' * 100_000)")

    long, flood = sandbox(body)
    assert long.truncated and len(long.output) < 2100
    assert "characters left out" in long.output
    assert flood.status == "output"  # the file size limit stops the flood
    assert "File too large" in flood.error


def test_the_host_environment_secrets_are_not_visible(sandbox, environment, monkeypatch):
    monkeypatch.setenv("CSVTRI_TEST_API_KEY", "sk-do-not-leak-1234")
    code = (
        "import os, glob\n"
        "seen = str(dict(os.environ))\n"
        "for path in glob.glob('/proc/[0-9]*/environ'):\n"
        "    try:\n"
        "        seen += open(path, errors='replace').read()\n"
        "    except OSError:\n"
        "        pass\n"
        "print('LEAK' if 'sk-do-not-leak' in seen else 'clean')"
    )

    async def body(pool):
        return await cells(pool, code)

    (result,) = sandbox(body)
    if environment == "local" and "LEAK" in result.output:
        pytest.skip("local shares the host's PID namespace here: /proc/PID/environ is readable")
    assert result.status == "ok"
    assert result.output.strip() == "clean"


def test_the_network_is_cut(sandbox, environment):
    code = (
        "import socket\n"
        "try:\n"
        "    socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
        "    print('CONNECTED')\n"
        "except OSError as exc:\n"
        "    print('refused', type(exc).__name__)"
    )

    async def body(pool):
        return await cells(pool, code)

    (result,) = sandbox(body)
    if environment == "local" and "CONNECTED" in result.output:
        pytest.skip("environment local left the network on here (no network namespace for it)")
    assert result.status == "ok"
    assert result.output.startswith("refused")


# local does not protect files outside the workspace (documented): bubblewrap's promise only
@pytest.mark.parametrize("environment", ["bubblewrap"], indirect=True)
def test_writes_outside_the_scratch_folder_do_not_reach_the_host(sandbox, environment, tmp_path):
    outside = tmp_path / "outside.txt"
    system = Path(__file__).with_name("written-by-sandbox.txt")  # the read-only repository

    async def body(pool):
        return await cells(
            pool,
            f"open({str(outside)!r}, 'w').write('x')\nprint('wrote tmp')",
            f"open({str(system)!r}, 'w').write('x')",
            "open('scratch.txt', 'w').write('ok')\nprint(open('scratch.txt').read())",
        )

    tmp, repo, scratch = sandbox(body)
    assert tmp.status == "ok" and tmp.output.strip() == "wrote tmp"
    assert not outside.exists()  # ... into the sandbox's own /tmp
    assert repo.status == "error" and "Read-only file system" in repo.error
    assert not system.exists()
    assert scratch.status == "ok" and scratch.output.strip() == "ok"


def test_the_csv_is_read_only_and_episodes_start_from_a_clean_state(sandbox, shop):
    before = shop.read_bytes()

    async def body(pool):
        first = await cells(
            pool,
            "df['units'] = 0\nsecret = 42\nopen('left.txt', 'w').write('x')",
            "open(CSV_PATH, 'w').write('hacked')",
            "import pandas\npandas.read_csv_original = pandas.read_csv\n"
            "pandas.read_csv = lambda *a, **k: None",
        )
        second = await cells(
            pool,
            "import os, pandas\nprint(df.units.sum(), 'secret' in globals(), "
            "os.path.exists('left.txt'), pandas.read_csv(CSV_PATH).shape)",
        )
        return first, second[0]

    (_, write, _), fresh = sandbox(body)
    assert write.status == "error" and "Operation not permitted" in write.error
    assert shop.read_bytes() == before
    assert fresh.output.split() == ["252", "False", "False", "(24,", "6)"]


def test_printing_a_forged_marker_submits_nothing(sandbox):
    forged = marker("submit", "0123456789abcdef", {"answer": 99})

    async def body(pool):
        return await cells(pool, f"print({forged!r})", "print(df.units.sum())")

    forged_run, printed = sandbox(body)
    assert not forged_run.submitted and "<<bashgym:submit" in forged_run.output
    assert printed.status == "ok" and not printed.submitted  # printing is not submitting


def test_two_submissions_are_a_protocol_violation(sandbox):
    code = "try:\n    submit(1)\nexcept BaseException:\n    pass\nsubmit(2)"

    async def body(pool):
        return await cells(pool, code)

    (result,) = sandbox(body)
    assert result.status == "protocol" and not result.submitted
    assert "more than once" in result.error


def test_a_killed_worker_is_restarted_and_the_episode_told(sandbox):
    async def body(pool):
        got = await cells(
            pool,
            "x = 1",
            "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
            "print('x' in globals())",
        )
        return got, pool.restarts, pool.workers[0].alive

    (_, killed, after), restarts, alive = sandbox(body)
    assert killed.status == "crashed" and "restarted" in killed.error
    assert after.restarted and after.output.strip() == "False"
    assert restarts == 1 and alive


def test_a_worker_that_cannot_start_says_why(sandbox, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\xff\xfe\x00garbage\x00")
    from bashgym_pipelines_csv_triangulation.pool import SandboxError

    with pytest.raises(SandboxError, match="the sandbox worker failed"):
        sandbox(cells, csv=bad)
    assert os.path.exists(bad)
