"""The seccomp filter bwrap loads (`--seccomp FD`) before it runs a command: system calls a task
has no business making answer EPERM (never a kill, so a tool sees a clean error and goes on).

Built with libseccomp (through `pyseccomp`, its ctypes binding with the API of libseccomp's own
Python package) rather than hand-written BPF: libseccomp knows each architecture's numbers, the
x32 and 32-bit entry points, and how to compare 32-bit ioctl arguments, which hand-written filters
get wrong. The list follows Flatpak's and Docker's default profiles (Codex's Linux sandbox loads
one the same way): what could change the kernel, the machine or the clock, reach other
processes, or open new namespaces, which give back the capabilities bwrap dropped.

Everything else is allowed: a filter that breaks compilers, git, Python or Node is worse than
none. Where libseccomp is missing the sandbox runs without a filter and says so in its notes.
"""

from __future__ import annotations

import errno
import functools
import tempfile
import termios

# each answers EPERM whatever its arguments
BLOCKED = (
    # the kernel itself: images, modules, BPF programs, profiling, key rings
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
    "perf_event_open", "keyctl", "add_key", "request_key", "lookup_dcookie", "syslog",
    # the machine: reboot, swap, accounting, quotas, the clock, NUMA placement of others
    "reboot", "swapon", "swapoff", "acct", "quotactl", "settimeofday", "clock_settime",
    "clock_adjtime", "adjtimex", "stime", "move_pages", "migrate_pages", "vhangup",
    # mounts and namespaces (new ones hand back capabilities; mounts could hide the read-only
    # system behind a writable copy)
    "mount", "umount", "umount2", "pivot_root", "chroot", "unshare", "setns", "open_tree",
    "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    # other processes and the kernel's memory: tracing, file handles past permissions,
    # userfaultfd (a kernel exploit's favourite timing tool), io_uring (bypasses this filter)
    "ptrace", "process_vm_writev", "open_by_handle_at", "name_to_handle_at", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "uselib", "nfsservctl",
)  # fmt: skip

CLONE_NEW = {  # clone() flags that make a namespace: EPERM, as unshare
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}  # fmt: skip

# personality(2) flags that weaken a process (no ASLR, executable data, a mapped page 0, the
# legacy layout): refused on Linux and 32-bit Linux, with or without UNAME26. libseccomp takes one
# comparison per argument, so "anything but Docker's allowed values" cannot be said; and the
# query (0xffffffff) has every bit set, so a mask cannot either: each combination is listed.
WEAKENING = (0x0040000, 0x0400000, 0x0100000, 0x0200000)  # NO_RANDOMIZE, READ_IMPLIES_EXEC, ...


def weakened_personalities() -> list[int]:
    """Every persona (PER_LINUX, PER_LINUX32, each with UNAME26) with any of WEAKENING set."""
    out = []
    for combo in range(1, 1 << len(WEAKENING)):
        flags = sum(bit for i, bit in enumerate(WEAKENING) if combo >> i & 1)
        out += [base | flags for base in (0x0, 0x8, 0x20000, 0x20008)]
    return out


IOCTLS = {"TIOCSTI": termios.TIOCSTI, "TIOCLINUX": getattr(termios, "TIOCLINUX", 0x541C)}


@functools.cache
def compiled() -> tuple[bytes | None, str]:
    """The filter as BPF for this machine, and one line saying what it is (or why there is
    none). Built once per process."""
    try:  # guarded, so here: without libseccomp.so the import fails and the sandbox says so
        import pyseccomp as seccomp
    except (ImportError, RuntimeError, OSError) as exc:  # RuntimeError: no libseccomp.so
        return None, f"NO seccomp filter: libseccomp is missing ({exc}; Debian libseccomp2)"
    eperm = seccomp.ERRNO(errno.EPERM)
    try:
        f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        native = seccomp.system_arch()
        compat = {seccomp.Arch.X86_64: seccomp.Arch.X86, seccomp.Arch.AARCH64: seccomp.Arch.ARM}
        if native in compat:  # 32-bit system calls from a 64-bit process get the same rules
            f.add_arch(compat[native])
        for name in BLOCKED:
            _add(f, eperm, name)
        for flag in CLONE_NEW.values():
            _add(f, eperm, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        # clone3 passes its flags in memory a filter cannot read: ENOSYS makes the C library
        # fall back to clone, whose flags it can (as Flatpak does)
        _add(f, seccomp.ERRNO(errno.ENOSYS), "clone3")
        for value in IOCTLS.values():  # the kernel reads cmd as 32 bits: compare those only
            _add(f, eperm, "ioctl", seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, value))
        for persona in weakened_personalities():
            _add(f, eperm, "personality", seccomp.Arg(0, seccomp.EQ, persona))
        with tempfile.TemporaryFile() as out:
            f.export_bpf(out)
            out.seek(0)
            bpf = out.read()
    except (OSError, ValueError, RuntimeError) as exc:
        return None, f"NO seccomp filter: libseccomp could not build it ({exc})"
    return bpf, (
        "seccomp filter: kernel, mount, namespace, tracing, keyring, clock and TIOCSTI "
        "system calls answer EPERM"
    )


def _add(f, action: int, name: str, *args) -> None:
    """One rule; a system call this architecture does not have is skipped (nothing to block):
    libseccomp answers EINVAL for a name it cannot resolve."""
    try:
        f.add_rule(action, name, *args)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
