"""Processes read through Linux ``/proc``: parents, children, command lines, CPU fields.

Tests, fault tests and benchmarks find Spark's processes with these (the driver JVM a
SparkSession started, the Python workers a task daemon forked, the process tree whose CPU a
benchmark prices). Every function answers for a process that is gone, or where ``/proc`` is
missing, with an empty value (``None``, ``[]``, ``b""``) instead of raising.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ancestors",
    "available",
    "children_map",
    "cmdline",
    "descendants",
    "find_child",
    "parent",
    "stat_fields",
]


def available() -> bool:
    """Whether processes and their sockets can be inspected through ``/proc``."""
    return Path("/proc/self/fd").is_dir() and Path("/proc/net/tcp").exists()


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name: ``[state, ppid, ...]`` (so field
    ``n`` of proc(5) is at index ``n - 3``), or None once the process is gone."""
    try:
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def parent(pid: int) -> int | None:
    """The parent pid of ``pid``, or None once it is gone."""
    fields = stat_fields(pid)
    return int(fields[1]) if fields else None


def ancestors(pid: int) -> list[int]:
    """The parent process ids of ``pid``, nearest first (``[]`` once the process is gone)."""
    chain: list[int] = []
    while pid > 1 and (up := parent(pid)) is not None:
        chain.append(up)
        pid = up
    return chain


def cmdline(pid: int) -> bytes:
    """The command line of ``pid``, arguments separated by NUL bytes (``b""`` once gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def children_map() -> dict[int, list[int]]:
    """``{parent pid: [child pids]}`` of every process."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (up := parent(int(entry.name))) is not None:
            children.setdefault(up, []).append(int(entry.name))
    return children


def descendants(pid: int, children: dict[int, list[int]] | None = None) -> list[int]:
    """Every process below ``pid`` (from ``children``, a :func:`children_map`, when given)."""
    tree = children_map() if children is None else children
    found, todo = [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def find_child(pid: int, marker: bytes) -> int | None:
    """The first process below ``pid`` whose command line holds ``marker``."""
    for child in descendants(pid):
        if marker in cmdline(child):
            return child
    return None
