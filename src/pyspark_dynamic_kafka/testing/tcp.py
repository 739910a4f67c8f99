"""TCP connections to brokers: whether a port accepts them, and counting client connections
(to prove that clients were closed)."""

from __future__ import annotations

import socket

__all__ = ["accepts_connections", "count_client_connections"]

_TCP_ESTABLISHED = "01"


def count_client_connections(port: int) -> int:
    """Count the established TCP connections from this machine to ``port``.

    Reads ``/proc/net/tcp`` and ``/proc/net/tcp6`` (Linux; the current network namespace) and
    counts the sockets in state ESTABLISHED whose *remote* port is ``port``, whatever the
    process or address. The broker's side of a connection has ``port`` as its local port and
    is not counted; a Tansu broker opens no connection to itself.

    Parameters
    ----------
    port:
        The broker's port.

    Returns
    -------
    int
        The number of client connections; 0 where ``/proc/net`` does not exist.
    """
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as f:
                lines = f.readlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _TCP_ESTABLISHED:
                continue
            remote_port = fields[2].rpartition(":")[2]
            if int(remote_port, 16) == port:
                count += 1
    return count


def accepts_connections(server: str, timeout: float = 1.0) -> bool:
    """Whether ``host:port`` (``[v6]:port`` too) accepts a TCP connection within ``timeout`` s."""
    host, _, port = server.strip().rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except OSError:
        return False
