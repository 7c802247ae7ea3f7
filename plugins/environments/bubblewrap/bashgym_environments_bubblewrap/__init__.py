"""Environment `bubblewrap`: each of an agent's commands in its own bwrap sandbox, as Claude
Code's Linux sandbox and anthropic-experimental/sandbox-runtime do.

What it guarantees (where `available()` is None: bwrap is installed and can create namespaces),
even when BashGym runs as root; each claim is an attack in tests/test_attacks.py:
- files: only the workspace is writable, bound at its own path (so the host's file operations
  and the command agree on every path); the rest of the system is read-only, submounts too;
  /tmp is the session's own (a folder made for it, kept across its commands, removed at
  close), not the host's; a symlink out of the workspace leads to read-only or hidden files;
- the kernel: /proc/sys (every sysctl, core_pattern included), /proc/sysrq-trigger, /proc/irq,
  /proc/bus, /proc/fs and /sys are read-only; /proc/kcore, /proc/keys, /proc/timer_list and
  their kind are empty; no capability is held and none can come back (own user namespace where
  the machine allows one: empty bounding set, no nested namespace); a seccomp filter (built
  with libseccomp) answers EPERM to mount/umount, pivot_root, chroot, unshare/setns and
  namespace-making clone, ptrace, kexec, modules, bpf, perf_event_open, key rings, reboot,
  swap, acct, clock setting, open_by_handle_at, userfaultfd, io_uring, weakening personality
  flags, and ioctl TIOCSTI/TIOCLINUX;
- hidden: /etc/shadow, /etc/gshadow, the SSH host keys, and in each home the credentials and
  histories of common tools (~/.ssh, ~/.aws, ~/.config, ~/.claude, ~/.bash_history, ...) and
  the docker socket are empty or unreadable inside (`hide` option);
- network: none (its own network namespace with a loopback) unless `network = true`; without
  network, /run is empty too, so no host daemon's unix socket is reachable;
- processes: its own PID namespace and /proc: nothing outside is visible, signalable or
  readable (BashGym's /proc/PID/environ); no descriptor of BashGym's is inherited; what a
  command leaves running (setsid, nohup, double fork) stops when it ends; bwrap dies with
  BashGym (`--die-with-parent`) and the command has no controlling terminal (`--new-session`:
  no TIOCSTI into BashGym's terminal);
- disk: what the session's commands add to the workspace and /tmp together is held at `disk_mb`
  (measured as `du`, at most every 0.5 s): past it, what runs is stopped and no file can grow
  until files are removed;
- and everything `local` holds: the timeout, cut output, the environment allow-list (HOME is the
  workspace, TMPDIR the private /tmp; no API key of BashGym's passes), rlimits per process, the
  session's pids and memory cgroup (a fork bomb is held at `processes` even for root), and
  `session.workspace` refusing paths that leave the workspace.

What it does NOT do:
- hide the rest of the file system from reads: other users' readable files, /home, the run
  folder (run.json, events, the other tasks' workspaces) and the source checkout stay readable
  unless listed in `hide`;
- limit the disk exactly: a command may go over `disk_mb` by what it writes in one interval of
  the watcher (0.5 s, longer for a big workspace) plus one file of `file_size_mb`; folders
  of `writable` are not counted; the number of files is not limited;
- filter network by host: it is all or nothing; with `network = true` the host's network and
  /run are shared;
- stop a kernel exploit through the system calls it allows; without libseccomp (Debian
  libseccomp2) or a user namespace (some containers) it says so in its notes and holds the rest;
- keep a command's reads of /proc/sys from showing the host's values (read-only, not hidden).
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
