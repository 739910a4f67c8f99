"""A TCP proxy between Kafka clients and one broker that damages Fetch responses on request.

The broker advertises the proxy's port (``ApacheKafkaCluster(advertised_ports=...)``), so every
client connection, the bootstrap one included, goes through it. The proxy follows Kafka's
framing both ways: each request's size, API key, version and correlation id, each response's
size and correlation id. Nothing is changed until :meth:`DamagingProxy.arm` names a damage; then
the next Fetch responses that carry a record batch (any Fetch version a client speaks, the
flexible ones included) are damaged in their first partition's first batch, once per armed
count:

- ``flip``: one byte inside a record's value inverted (the batch's CRC-32C no longer matches);
- ``huge``: the batch's length set to 2 GiB - 1 (2,147,483,647 bytes);
- ``negative``: the batch's length set to -1;
- ``cut``: the connection closed half way through the response (shut down both ways, so the
  client sees it at once, as it would a broker's crash or a reset);
- ``silence`` (:data:`SILENCE`): the response and every later one on its connection swallowed,
  the connection left open: a broker (or a network path) that stops answering without closing,
  which only a client's request timeout ends.

No real broker sends such responses on purpose, so this is the one way to produce them against
a real broker and real clients; the records themselves are the broker's.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

#: The damages every reader recovers from within seconds (the parametrized ones).
DAMAGES = ("flip", "huge", "negative", "cut")
#: A connection gone silent: no answer, never closed (a reader waits out its request timeout).
SILENCE = "silence"

_FETCH = 1
_FLEXIBLE_FETCH = 12  # Fetch v12 on: compact arrays and strings, tagged fields
_BATCH_HEAD = 61  # a record batch's fixed part (magic 2)


class _Reader:
    """Kafka's encodings read from a response body (the non-flexible and the flexible ones)."""

    def __init__(self, data: bytes | bytearray, pos: int = 0) -> None:
        self.data, self.pos = data, pos

    def skip(self, n: int) -> None:
        self.pos += n

    def int(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.pos]
            self.pos += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def length(self, flexible: bool, wide: bool = True) -> int:
        """An array's, a string's or bytes' length (-1 for null)."""
        if flexible:
            return self.uvarint() - 1
        return self.int(">i" if wide else ">h")

    def tags(self, flexible: bool) -> None:
        if flexible:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.skip(self.uvarint())


def first_records(body: bytes | bytearray, version: int) -> tuple[int, int] | None:
    """Where the first non-empty records of a Fetch response body (after the response header)
    are, as (start, length); ``None`` when no partition carries records."""
    flexible = version >= _FLEXIBLE_FETCH
    r = _Reader(body)
    r.skip(4 + (6 if version >= 7 else 0))  # throttle time; error code and session id
    for _ in range(max(r.length(flexible), 0)):
        if version >= 13:
            r.skip(16)  # topic id
        else:
            r.skip(max(r.length(flexible, wide=False), 0))  # topic name
        for _ in range(max(r.length(flexible), 0)):
            r.skip(4 + 2 + 8 + 8 + (8 if version >= 5 else 0))  # partition .. log start offset
            for _ in range(max(r.length(flexible), 0)):  # aborted transactions
                r.skip(16)
                r.tags(flexible)
            r.skip(4 if version >= 11 else 0)  # preferred read replica
            size = r.length(flexible)
            if size > 0:
                return r.pos, size
            r.tags(flexible)
        r.tags(flexible)
    return None


def _flip_a_value_byte(data: bytearray, batch: int) -> None:
    """Invert the middle byte of the first non-empty value of the (uncompressed) batch at
    ``batch``."""
    (attributes,) = struct.unpack_from(">h", data, batch + 21)
    assert attributes & 0x07 == 0, "the proxy damages values of uncompressed batches only"
    (count,) = struct.unpack_from(">i", data, batch + 57)
    r = _Reader(data, batch + _BATCH_HEAD)
    for _ in range(count):
        length = r.varint()
        end = r.pos + length
        r.skip(1)  # attributes
        r.varint()  # timestamp delta
        r.varint()  # offset delta
        r.skip(max(r.varint(), 0))  # key
        size = r.varint()
        if size > 0:
            data[r.pos + size // 2] ^= 0xFF
            return
        r.pos = end
    raise AssertionError("the first batch has no record with a value to damage")


def damage(frame: bytearray, version: int, kind: str) -> bool:
    """Damage a whole Fetch response ``frame`` (size prefix, correlation id, header tags, body)
    of Fetch ``version`` in place as ``kind`` says (``cut`` and ``silence`` are the
    connection's, not done here); whether it carries a batch to damage."""
    start = 8
    if version >= _FLEXIBLE_FETCH:
        header = _Reader(frame, start)
        header.tags(True)
        start = header.pos
    found = first_records(memoryview(frame)[start:], version)
    if found is None:
        return False
    batch = start + found[0]
    if kind == "flip":
        _flip_a_value_byte(frame, batch)
    elif kind in ("huge", "negative"):
        struct.pack_into(">i", frame, batch + 8, 2**31 - 1 if kind == "huge" else -1)
    return True


@dataclass
class DamagingProxy:
    """A proxy on a free loopback port to the broker ``upstream()`` names (asked at each
    connection, so the broker may start after the proxy). Stop it with :meth:`close`."""

    upstream: Callable[[], tuple[str, int]]
    #: What was damaged, in order: (damage, Fetch version).
    damaged: list[tuple[str, int]] = field(default_factory=list)
    _armed: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _sockets: list[socket.socket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name="damaging-proxy", daemon=True).start()

    def arm(self, kind: str, count: int = 1) -> None:
        """Damage the next ``count`` Fetch responses carrying a batch as ``kind`` says."""
        assert kind in (*DAMAGES, SILENCE), kind
        with self._lock:
            self._armed.extend([kind] * count)

    def close(self) -> None:
        """Stop accepting and cut every connection."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                _cut(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                broker = socket.create_connection(self.upstream(), timeout=10)
                broker.settimeout(None)
            except OSError:
                _cut(client)
                continue
            with self._lock:
                self._sockets += [client, broker]
            asked: dict[int, tuple[int, int]] = {}  # correlation id -> (API key, version)
            for target in (self._requests, self._responses):
                args = (client, broker, asked)
                threading.Thread(target=target, args=args, daemon=True).start()

    def _requests(self, client: socket.socket, broker: socket.socket, asked: dict) -> None:
        while (frame := _frame(client)) is not None:
            key, version, correlation = struct.unpack_from(">hhi", frame, 4)
            asked[correlation] = (key, version)
            if not _send(broker, frame):
                break
        _cut(client, broker)

    def _responses(self, client: socket.socket, broker: socket.socket, asked: dict) -> None:
        silent = False
        while (frame := _frame(broker)) is not None:
            (correlation,) = struct.unpack_from(">i", frame, 4)
            key, version = asked.pop(correlation, (-1, -1))
            if silent:
                continue  # swallowed: the client hears nothing more on this connection
            kind = self._damage(frame, version) if key == _FETCH else None
            if kind == SILENCE:
                silent = True
                continue
            if kind == "cut":
                _send(client, frame[: len(frame) // 2])
                break
            if not _send(client, frame):
                break
        _cut(client, broker)

    def _damage(self, frame: bytearray, version: int) -> str | None:
        with self._lock:
            if not self._armed or not damage(frame, version, self._armed[0]):
                return None
            kind = self._armed.pop(0)
            self.damaged.append((kind, version))
            return kind


def _frame(sock: socket.socket) -> bytearray | None:
    """One size-prefixed frame (its prefix included), or ``None`` at the connection's end."""
    head = _exactly(sock, 4)
    if head is None:
        return None
    body = _exactly(sock, struct.unpack(">i", head)[0])
    return None if body is None else bytearray(head + body)


def _exactly(sock: socket.socket, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except OSError:
            return None
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _send(sock: socket.socket, data: bytes | bytearray) -> bool:
    try:
        sock.sendall(data)
        return True
    except OSError:
        return False


def _cut(*socks: socket.socket) -> None:
    """Shut both ways down (a blocked ``recv`` on the socket returns, the peer sees the end at
    once: closing alone does neither while another thread reads it), then close."""
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
