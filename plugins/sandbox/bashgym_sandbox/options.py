"""What a user can set for a sandboxed command: time, limits, output, environment variables.

`SandboxOptions` is shared by every environment built on `SandboxSession` (local, bubblewrap);
each adds what only it can do (network, hidden paths). Plain config, apart from the code that
acts on it.
"""

from __future__ import annotations

from pydantic import Field

from bashgym.contracts import Options


class SandboxOptions(Options):
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="Seconds a command may run before it is stopped (a caller may ask for "
        "another limit per command).",
    )
    cpu_s: int | None = Field(
        default=300,
        ge=1,
        description="CPU seconds each process may use (RLIMIT_CPU); None: no limit.",
    )
    memory_mb: int | None = Field(
        default=2048,
        ge=16,
        description="Memory for all of a session's processes together (a memory cgroup); where "
        "no cgroup can be made, address space per process instead (RLIMIT_AS). None: no limit.",
    )
    file_size_mb: int | None = Field(
        default=1024,
        ge=1,
        description="Largest file a process may write (RLIMIT_FSIZE); None: no limit.",
    )
    processes: int | None = Field(
        default=512,
        ge=8,
        description="Processes and threads a session may hold at once (a pids cgroup; where "
        "none can be made and not root, RLIMIT_NPROC, which counts all of the user's "
        "processes). None: no limit.",
    )
    output_limit: int = Field(
        default=64_000,
        ge=1_000,
        description="Bytes of a command's output kept (its head and tail); a command writing "
        "over 100 times this is stopped.",
    )
    pass_env: list[str] = Field(
        default_factory=list,
        description="More environment variables to pass through, by name or shell glob "
        "('PIP_*'); a secret-looking name (*_KEY, *TOKEN*, AWS_*, ...) passes only when "
        "named exactly.",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="Variables set for every command, after the allow-list "
        "(e.g. {PYTHONUNBUFFERED = '1'}).",
    )
