"""Whose is a RUNNING MLflow run, and is that process still alive?

A process killed with SIGKILL (or a lost machine) never ends its run: MLflow leaves it
``RUNNING`` with no end time. To tell such a run from one that a concurrent process (a second
DVC job, another worker) is still writing, every run that :func:`clapcap.tracking.tracked`
opens carries :data:`PROCESS_TAG`, ``<host>:<pid>:<start>:<boot>``: the host name, the process
id, the process's start time (clock ticks after boot, ``/proc/<pid>/stat``) and the kernel's
boot id. The start time and the boot id keep a pid that a later process (or a reboot) reuses
from passing for the dead one; both are empty where ``/proc`` is absent.

:func:`process_state` answers ``alive``, ``dead`` or ``unknown`` (no record, or another host:
nothing here can see that process).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

PROCESS_TAG = "clapcap.process"
ALIVE, DEAD, UNKNOWN = "alive", "dead", "unknown"


def _stat(pid: int) -> list[str]:
    """Fields 3.. of ``/proc/<pid>/stat`` (state, ppid, ...), or [] when unreadable."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return stat[stat.rfind(")") + 2:].split()


def _start_ticks(pid: int) -> str:
    """The start time of process ``pid`` in clock ticks after boot, or "" when unreadable."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else ""  # field 22 of the whole line


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_tag(pid: int | None = None) -> str:
    """The :data:`PROCESS_TAG` value of process ``pid`` (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_ticks(pid)}:{_boot_id()}"


def _exists(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, killed and not yet reaped by its parent, does not)."""
    if _stat(pid)[:1] == ["Z"]:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process, but a live one
        return True
    return True


def process_state(tag: str | None) -> str:
    """``alive``, ``dead`` or ``unknown`` for the process a :data:`PROCESS_TAG` value records.

    ``unknown``: no (readable) record, or a process of another host.
    """
    parts = (tag or "").rsplit(":", 3)
    if len(parts) != 4 or not parts[1].isdigit():
        return UNKNOWN
    host, pid, start, boot = parts[0], int(parts[1]), parts[2], parts[3]
    if host != socket.gethostname():
        return UNKNOWN
    if boot and _boot_id() and boot != _boot_id():
        return DEAD  # the machine rebooted since
    if not _exists(pid):
        return DEAD
    if start and _start_ticks(pid) and start != _start_ticks(pid):
        return DEAD  # the pid now belongs to a later process
    return ALIVE
