"""A shell session confined to a task's workspace, under limits: what BashGym's environments
that run commands on this machine (`local`, `bubblewrap`) share, so it exists once.

An environment subclasses `SandboxSession` and puts its own isolation around each program by
overriding `wrap` (`unshare` for local, `bwrap` for bubblewrap), `guards` and `describe`; its
options class extends `SandboxOptions` with what only it can do (network, hidden paths).

The API:
- `SandboxSession`: runs commands (`run`) and long-lived workers (`argv`) through one prelude
  that changes into the workspace, joins the session's cgroup and sets the rlimits; the
  environment is an allow-list; `aclose` stops whatever is left in the cgroup.
- `SandboxOptions`: the limits a user sets for every such environment (time, CPU, memory, file
  size, processes, output, environment variables).
- `Workspace`: file operations confined to the workspace folder (the kernel's `Files`
  contract), every path resolved and refused if it leaves it, symlinks included.
- `workspace_folder(path)`: the `Workspace` for a session, refusing a missing folder, a file
  and `/`.
- `bash_path()`: the `bash` a session runs; `PRELUDE_FAILED`: the exit code of a prelude that
  refused or could not set up the sandbox.
- `sandbox_env`, `looks_secret`, `ALLOWED` (module `envvars`): the variables a command sees.
- `Cage`, `make_cage`, `hierarchies` (module `cgroups`): the session's cgroup.
"""

from bashgym_sandbox.cgroups import Cage, hierarchies, make_cage
from bashgym_sandbox.envvars import ALLOWED, looks_secret, sandbox_env
from bashgym_sandbox.options import SandboxOptions
from bashgym_sandbox.session import PRELUDE_FAILED, SandboxSession, bash_path, workspace_folder
from bashgym_sandbox.workspace import Workspace

__all__ = [
    "ALLOWED",
    "PRELUDE_FAILED",
    "Cage",
    "SandboxOptions",
    "SandboxSession",
    "Workspace",
    "bash_path",
    "hierarchies",
    "looks_secret",
    "make_cage",
    "sandbox_env",
    "workspace_folder",
]
