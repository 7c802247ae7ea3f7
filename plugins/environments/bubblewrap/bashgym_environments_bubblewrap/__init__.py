"""Environment `bubblewrap`: each of an agent's commands in its own bwrap sandbox, as Claude
Code's Linux sandbox and anthropic-experimental/sandbox-runtime do.

What it guarantees (where `available()` is None: bwrap is installed and can create namespaces):
- files: only the workspace is writable, bound at its own path (so the host's file operations
  and the command agree on every path); the rest of the system is read-only, submounts too;
  /tmp is the session's own (a folder made for it, kept across its commands, removed at
  close); the command holds no capabilities, even when BashGym runs as root;
- hidden: credentials of common tools (~/.ssh, ~/.aws, ~/.config/gh, ~/.claude, ...) and the
  docker socket are empty inside (`hide` option);
- network: none (its own network namespace with a loopback) unless `network = true`; without
  network, /run is empty too, so no host daemon's unix socket is reachable;
- processes: its own PID namespace and /proc: nothing outside is visible, signalable or
  readable (/proc/PID/environ); what a command leaves running stops when it ends; bwrap dies
  with BashGym (`--die-with-parent`) and the command is in a new session (`--new-session`);
- and everything `local` holds: the timeout, cut output, the environment allow-list (HOME is the
  workspace, TMPDIR the private /tmp), rlimits per process, the session's pids and memory cgroup
  (a fork bomb is held at `processes` even for root), and `session.workspace` refusing paths
  that leave the workspace.

What it does NOT do: hide the rest of the file system from reads (only the `hide` list), filter
system calls (no seccomp), or limit network by host (it is all or nothing).
"""

from bashgym import hookimpl
from bashgym_environments_bubblewrap.environment import BubblewrapEnvironment, BubblewrapSession
from bashgym_environments_bubblewrap.options import BubblewrapOptions
from bashgym_environments_bubblewrap.sandbox import INSTALL_HINT, why_not

__all__ = [
    "INSTALL_HINT",
    "BubblewrapEnvironment",
    "BubblewrapOptions",
    "BubblewrapSession",
    "why_not",
]


@hookimpl
def register_environments(register):
    register("bubblewrap", BubblewrapEnvironment())
