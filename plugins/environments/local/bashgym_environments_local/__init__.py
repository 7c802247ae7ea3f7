"""Environment `local`: an agent's commands in a `bash` child of BashGym, with limits.

What it guarantees, on Linux:
- time: each command is stopped at its timeout (default 30 s), its whole process group with it;
- output: the head and tail are kept (`output_limit` bytes); a command writing over 100 times
  that is stopped;
- environment: only an allow-list of variables passes (PATH, LANG, LC_*, TERM, TZ, USER,
  LOGNAME, NO_COLOR, and what `pass_env` names); HOME is the workspace, TMPDIR a private
  folder removed at close: API keys and tokens BashGym holds are never in a command's env;
- limits: CPU seconds and file size per process (rlimits); processes and memory for the whole
  session through a cgroup made under BashGym's own (v1, or v2 where delegated); where no cgroup
  can be made, RLIMIT_AS per process and, for a non-root user, RLIMIT_NPROC. A root BashGym with
  no pids cgroup has NO process limit (RLIMIT_NPROC does not hold for root): the session says so
  in `notes`, and bubblewrap in a cgroup is the environment to use for untrusted commands;
- namespaces, where `unshare` works (root, or unprivileged user namespaces): its own PID
  namespace and /proc, so a command cannot see or signal other processes nor read their
  environment, and all it started stops when it ends; with `network = false`, no network
  (only a loopback), or the session refuses to open where that cannot be done. The network is
  on by default: an agent started through `argv` (claude -p) must reach its model;
- file operations through `session.workspace` refuse every path that leaves the workspace,
  symlinks included; closing the session stops every process left in its cgroup, workers
  started through `argv` included (with no cgroup, those are their caller's to stop).

What it does NOT do: contain a command's own writes. A command runs as BashGym's user and can
write wherever that user can (beside the workspace, the real home by absolute path, /tmp).
Reads are not limited either. Use `bubblewrap` for that.

The module also exports the pieces other environments build on (`SandboxSession`,
`SandboxOptions`, and `Workspace`, the confined file operations of the kernel's `Files`
contract): the bubblewrap environment is this session with `bwrap` around it.
"""

from bashgym import hookimpl
from bashgym_environments_local.environment import LocalEnvironment, LocalSession
from bashgym_environments_local.options import LocalOptions, SandboxOptions
from bashgym_environments_local.session import (
    PRELUDE_FAILED,
    SandboxSession,
    bash_path,
    workspace_folder,
)
from bashgym_environments_local.workspace import Workspace

__all__ = [
    "PRELUDE_FAILED",
    "LocalEnvironment",
    "LocalOptions",
    "LocalSession",
    "SandboxOptions",
    "SandboxSession",
    "Workspace",
    "bash_path",
    "workspace_folder",
]


@hookimpl
def register_environments(register):
    register("local", LocalEnvironment())
