"""Records no Kafka client library here writes, produced byte for byte: a Produce v3 request
carrying one record batch (magic 2) that this module encodes itself.

Go and C producers can write a header name that is not UTF-8 (Kafka's protocol makes it bytes);
confluent-kafka and the Java client only take text. The broker checks the batch's CRC-32C and
its records' framing, so what lands in the log is a well-formed batch, as any producer's.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Sequence

#: A record: key, value, headers as (name bytes, value bytes or None).
RawRecord = tuple[bytes | None, bytes | None, Sequence[tuple[bytes, bytes | None]]]

_PRODUCE, _PRODUCE_VERSION = 0, 3


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        crc = n
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum of a record batch."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _var_bytes(data: bytes | None) -> bytes:
    return _varint(-1) if data is None else _varint(len(data)) + data


def record_batch(records: Sequence[RawRecord], timestamp_ms: int) -> bytes:
    """One uncompressed record batch of ``records`` (no producer id), base offset 0."""
    body = bytearray()
    for delta, (key, value, headers) in enumerate(records):
        record = b"\x00" + _varint(0) + _varint(delta) + _var_bytes(key) + _var_bytes(value)
        record += _varint(len(headers))
        for name, header_value in headers:
            record += _var_bytes(name) + _var_bytes(header_value)
        body += _varint(len(record)) + record
    after_crc = struct.pack(
        ">hiqqqhii", 0, len(records) - 1, timestamp_ms, timestamp_ms, -1, -1, -1, len(records)
    )
    after_crc += bytes(body)
    head = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c(after_crc))  # epoch, magic, CRC
    return struct.pack(">qi", 0, len(head) + len(after_crc)) + head + after_crc


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def produce_raw(leader: str, topic: str, partition: int, records: Sequence[RawRecord]) -> int:
    """Produce ``records`` as one batch to ``partition`` of ``topic`` through its ``leader``
    (``host:port``) with acks=all; the batch's base offset."""
    batch = record_batch(records, int(time.time() * 1000))
    request = struct.pack(">hhi", _PRODUCE, _PRODUCE_VERSION, 1) + _string("raw-produce")
    request += struct.pack(">hhi", -1, -1, 30_000)  # no transactional id, acks=all, timeout
    request += struct.pack(">i", 1) + _string(topic)
    request += struct.pack(">ii", 1, partition) + struct.pack(">i", len(batch)) + batch
    host, port = leader.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        answer = _read_exactly(sock, struct.unpack(">i", _read_exactly(sock, 4))[0])
    # correlation id, topics (1), name, partitions (1), index, error code, base offset, ...
    name_len = struct.unpack_from(">h", answer, 8)[0]
    at = 10 + name_len + 4
    index, error, base = struct.unpack_from(">ihq", answer, at)
    if error != 0 or index != partition:
        raise AssertionError(f"Produce to {topic}/{partition} answered error code {error}")
    return int(base)


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise AssertionError("the broker closed the connection mid-response")
        data += chunk
    return bytes(data)
