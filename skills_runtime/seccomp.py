"""The seccomp filter every skill process runs under, compiled here and handed to bwrap as BPF.

Allow by default (Python needs a broad base), deny what a skill has no business doing: new sockets
(the only channel is the stdio pipe the host gave it), tracing or reading other processes, mounts
and namespaces, kernel keyrings, BPF, perf, io_uring (which would bypass the filter), module and
kexec loading, and injecting keystrokes into a terminal. Denied calls fail with EPERM, so a skill
sees an ordinary error; a foreign architecture's syscalls kill the process (libseccomp default).

MCP servers get the same filter with one difference: `socketpair(AF_UNIX, ...)` is allowed, because
asyncio and libuv build their event loops on one (an unconnected pair of this process's own; it
reaches nothing). `socket`, `connect`, `bind` and the rest stay denied, except for a server the
user allowed hosts for: it also gets `socket`/`connect`/`bind`/`listen`/`accept`, which inside its
network namespace reach only its own loopback (where the egress relay listens) and the one Unix
socket bound into it (the bot's SSRF-checked egress proxy).
"""

from __future__ import annotations

import errno
import os
from functools import lru_cache

DENIED = (
    "socket",
    "socketpair",
    "connect",
    "bind",
    "listen",
    "accept",
    "accept4",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_getfd",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "open_by_handle_at",
    "name_to_handle_at",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "syslog",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "clock_adjtime",
    "quotactl",
    "personality",
    "mknod",
    "mknodat",
)
_CLONE_NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)
"""CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME."""
_TIOCSTI = 0x5412


class _Fd:
    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd


_AF_UNIX = 1


SOCKET_CALLS = frozenset(("socket", "connect", "bind", "listen", "accept", "accept4"))


@lru_cache(maxsize=3)
def filter_bpf(unix_pairs: bool = False, sockets: bool = False) -> bytes:
    """The compiled BPF program (built once per process and variant; libseccomp is slow to build it).
    `unix_pairs`: allow socketpair(AF_UNIX) (the MCP server variant), every other family denied.
    `sockets`: also allow the SOCKET_CALLS (an MCP server with allowed hosts; its net namespace has
    nothing but loopback)."""
    import pyseccomp as sc  # lazy: 11 ms, 2680 KiB

    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        if sockets and name in SOCKET_CALLS:
            continue
        if unix_pairs and name == "socketpair":
            flt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, _AF_UNIX))
            continue
        flt.add_rule(sc.ERRNO(errno.EPERM), name)
    for flag in _CLONE_NAMESPACE_FLAGS:
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory the filter cannot read: ENOSYS makes libc fall back to clone.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    flt.add_rule(sc.ERRNO(errno.EPERM), "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, _TIOCSTI))
    fd = os.memfd_create("owlia-seccomp", os.MFD_CLOEXEC)
    try:
        flt.export_bpf(_Fd(fd))
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def filter_fd(unix_pairs: bool = False, sockets: bool = False) -> int:
    """A fresh, inheritable-by-pass_fds memfd holding the BPF program, positioned at its start."""
    fd = os.memfd_create("owlia-seccomp-bpf", os.MFD_CLOEXEC)
    os.write(fd, filter_bpf(unix_pairs, sockets))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
