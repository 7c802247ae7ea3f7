"""Environment `local`: an agent's commands in a `bash` child of BashGym, with limits.

`local` keeps a command from hurting BashGym and from running away; it is NOT a sandbox for the
machine's files. Use `bubblewrap` for untrusted commands; `local` is what runs where `bwrap`
does not (and every agent run says so loudly).

What it guarantees, on Linux (each line of `describe()` says what holds in a session, and
`notes` what holds less than asked, with why):
- time: each command is stopped at its timeout (default 30 s), its whole process group with it;
- output: the head and tail are kept (`output_limit` bytes); a command writing over 100 times
  that is stopped;
- environment: only an allow-list of variables passes (PATH, LANG, LC_*, TERM, TZ, USER,
  LOGNAME, NO_COLOR, and what `pass_env` names); HOME is the workspace, TMPDIR a private
  folder removed at close;
- secrets: no API key BashGym holds reaches a command: not through its environment (the
  allow-list), nor through BashGym's /proc/PID/environ or memory: BashGym's process is made
  non-dumpable (`lockdown`), so no process of its user without CAP_SYS_PTRACE may read them,
  and in a PID namespace BashGym is not even visible. (A program BashGym starts *with* a key,
  e.g. `claude -p` through `argv`, exposes that key to the commands it runs itself.);
- privileges: a command holds no capability and has no_new_privs (`setpriv`), even when
  BashGym runs as root: it cannot mount or unmount (so not `umount /proc` to see the host's),
  set the hostname, trace or read other processes, type into a terminal that is not its own,
  or gain privileges through setuid programs;
- kernel: with a mount namespace (a PID namespace brings one), /proc and /sys are read-only and
  /sys/fs/cgroup is hidden: a root command cannot write sysctls (kernel.core_pattern),
  /proc/sysrq-trigger, or cgroup files (so cannot leave or loosen its cgroup);
- terminal: a command runs in a new session with no controlling terminal and stdin from
  /dev/null; a program started through `argv` that still has one is refused (exit 125), so no
  keystrokes can be pushed into BashGym's terminal (TIOCSTI);
- limits: CPU seconds and file size per process (rlimits); processes and memory for the whole
  session through a cgroup made under BashGym's own (v1, or v2 where delegated); where no cgroup
  can be made, RLIMIT_AS per process and, for a non-root user, RLIMIT_NPROC. A root BashGym with
  no pids cgroup has NO process limit (RLIMIT_NPROC does not hold for root): the session says so
  in `notes`;
- namespaces, where `unshare` works (root, or unprivileged user namespaces): its own PID
  namespace and /proc, so a command cannot see or signal BashGym or any other process, and all
  it started stops when it ends; with `network = false`, no network (only a loopback), or the
  session refuses to open where that cannot be done. The network is on by default: an agent
  started through `argv` (claude -p) must reach its model;
- file operations through `session.workspace` refuse every path that leaves the workspace,
  symlinks included; closing the session stops every process left in its cgroup, workers
  started through `argv` included (with no cgroup, those are their caller's to stop).

What it does NOT do:
- contain a command's own writes. A command runs as BashGym's user and can write wherever that
  user can (beside the workspace, the real home by absolute path, /tmp, /dev/shm). As root that
  is the whole machine (/etc, /root, BashGym's own code, block devices): a root BashGym with
  `local` is not safe against a hostile command, whatever the lines above say;
- limit reads: a command reads what BashGym's user can (as root without CAP_DAC_OVERRIDE,
  still every root-owned file: /etc/shadow, ~/.ssh of root);
- limit the network (on by default; `network = false` cuts it where namespaces work);
- without namespaces (no `unshare`, or no user namespaces for a non-root user): a command sees
  every process and can signal BashGym's and its user's processes, can read the environment of
  its user's other processes (not BashGym's), may leave processes running (until the session
  closes, with a cgroup), and as root can write sysctls and cgroup files. Each is in `notes`.

The session itself (limits, cgroup, the environment allow-list, the confined file operations)
is the library `bashgym_sandbox`, which bubblewrap builds on too; what is `local`'s own is here:
`unshare` namespaces (`namespaces`), the privilege drop and read-only kernel interfaces
(`lockdown`), and `LocalEnvironment`/`LocalSession`/`LocalOptions`.
"""

from bashgym import hookimpl
from bashgym_environments_local.environment import LocalEnvironment, LocalSession
from bashgym_environments_local.options import LocalOptions

__all__ = ["LocalEnvironment", "LocalOptions", "LocalSession"]


@hookimpl
def register_environments(register):
    register("local", LocalEnvironment())
