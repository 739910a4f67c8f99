"""Jars from Maven Central over plain HTTPS, without Maven, each checked twice.

A lock list (a text file checked in beside the module that uses it, e.g. ``kafka_jars.lock``)
names every jar by its Maven coordinates with the SHA-1 it must have. :func:`fetch_jars` fetches
each jar and the ``.sha1`` file the repository publishes beside it, and keeps the jar only when
the published SHA-1, the one of the bytes fetched and the locked one are the same: a repository
(or a mirror, :data:`REPOSITORY_ENV_VAR`) serving other bytes, even with a ``.sha1`` that fits
them, is refused with the URL named. Only the standard library is used (``urllib.request``,
which honours ``https_proxy``).

The lock list, one jar a line after ``#`` comments::

    pom-sha256 <sha256 of the Maven project the list was resolved from>
    <group>:<artifact>:<version>[:<classifier>] <sha1>
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pyspark_dynamic_kafka.testing.errors import ClusterStartError

__all__ = [
    "MAVEN_CENTRAL",
    "REPOSITORY_ENV_VAR",
    "JarLock",
    "KafkaToolingError",
    "LockedJar",
    "fetch_jars",
    "read_lock",
    "render_lock",
    "repository",
]

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
"""Where the jars come from unless :data:`REPOSITORY_ENV_VAR` names a mirror."""

REPOSITORY_ENV_VAR = "DYNAMIC_KAFKA_MAVEN_REPOSITORY"
"""Names a Maven repository (a mirror of Maven Central, same layout) to fetch the jars from."""

_CHUNK = 1 << 20  # bytes read at a time, between checks of the deadline
_log = logging.getLogger(__name__)


class KafkaToolingError(ClusterStartError):
    """``java`` is missing, or the jars of a Java process of the kit could not be fetched."""


@dataclass(frozen=True)
class LockedJar:
    """One jar of a lock list: its Maven coordinates and the SHA-1 its bytes must have."""

    group: str
    artifact: str
    version: str
    sha1: str
    classifier: str = ""

    @property
    def coordinates(self) -> str:
        """``group:artifact:version`` (``:classifier`` appended when there is one)."""
        tail = f":{self.classifier}" if self.classifier else ""
        return f"{self.group}:{self.artifact}:{self.version}{tail}"

    @property
    def file_name(self) -> str:
        """``artifact-version[-classifier].jar``, as Maven names it in a repository and in
        ``dependency:copy-dependencies``' output."""
        tail = f"-{self.classifier}" if self.classifier else ""
        return f"{self.artifact}-{self.version}{tail}.jar"

    def url(self, repository: str) -> str:
        """The jar's URL in the Maven repository ``repository`` (its base URL)."""
        group = self.group.replace(".", "/")
        return f"{repository.rstrip('/')}/{group}/{self.artifact}/{self.version}/{self.file_name}"


@dataclass(frozen=True)
class JarLock:
    """A lock list: the digest of the Maven project it was resolved from, and its jars."""

    pom_sha256: str
    jars: tuple[LockedJar, ...]


def repository() -> str:
    """The Maven repository to fetch from: :data:`REPOSITORY_ENV_VAR`, else Maven Central."""
    return os.environ.get(REPOSITORY_ENV_VAR, "").strip() or MAVEN_CENTRAL


def read_lock(path: Path) -> JarLock:
    """The lock list in ``path``.

    Raises
    ------
    KafkaToolingError
        If a line is not ``group:artifact:version[:classifier] sha1``, the ``pom-sha256`` line
        is missing, or no jar is listed.
    """
    digest, jars = "", []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) == 2 and fields[0] == "pom-sha256":
            digest = fields[1]
            continue
        parts = fields[0].split(":") if len(fields) == 2 else []
        sha1 = fields[1].lower() if len(fields) == 2 else ""
        if len(parts) not in (3, 4) or not all(parts) or len(sha1) != 40:
            raise KafkaToolingError(
                f"{path}:{number}: {raw.strip()!r} is not `group:artifact:version[:classifier] "
                "sha1` (40 hex digits); regenerate the list (make kafka-jars-lock)"
            )
        jars.append(LockedJar(parts[0], parts[1], parts[2], sha1, *parts[3:]))
    if not digest or not jars:
        raise KafkaToolingError(
            f"{path} lists no jar or has no `pom-sha256` line; regenerate it (make kafka-jars-lock)"
        )
    return JarLock(digest, tuple(jars))


def render_lock(lock: JarLock, header: Sequence[str] = ()) -> str:
    """The text of a lock list (``header``: its comment lines, without ``#``); jars sorted."""
    lines = [f"# {line}".rstrip() for line in header]
    lines.append(f"pom-sha256 {lock.pom_sha256}")
    lines += [f"{j.coordinates} {j.sha1}" for j in sorted(lock.jars, key=lambda j: j.coordinates)]
    return "\n".join(lines) + "\n"


def fetch_jars(
    jars: Sequence[LockedJar],
    folder: Path,
    *,
    repository_url: str | None = None,
    timeout: float = 900.0,
    request_timeout: float = 60.0,
    workers: int = 4,
) -> None:
    """Fetch every jar of ``jars`` into ``folder`` (as :attr:`LockedJar.file_name`).

    Parameters
    ----------
    jars:
        The jars, with the SHA-1 each must have (from a lock list).
    folder:
        An existing folder; a jar is written there only once its three SHA-1s agree.
    repository_url:
        The Maven repository's base URL; :func:`repository` by default.
    timeout:
        Seconds the whole fetch may take.
    request_timeout:
        Seconds a connection or a read of one response may stall.
    workers:
        Jars fetched at once.

    Raises
    ------
    KafkaToolingError
        If a URL cannot be fetched, or the repository publishes another SHA-1 than the locked
        one, or a jar's bytes do not have it; the message names the URL.
    """
    base = repository_url or repository()
    deadline = time.monotonic() + timeout
    began = time.monotonic()
    _log.info("fetching %d jars from %s into %s", len(jars), base, folder)
    with concurrent.futures.ThreadPoolExecutor(max(1, workers)) as pool:
        futures = [
            pool.submit(_fetch_one, jar, base, folder, deadline, request_timeout) for jar in jars
        ]
        try:
            for future in concurrent.futures.as_completed(futures):
                future.result()
        finally:
            for future in futures:
                future.cancel()
    _log.info("fetched %d jars in %.1fs", len(jars), time.monotonic() - began)


def _fetch_one(
    jar: LockedJar, base: str, folder: Path, deadline: float, request_timeout: float
) -> None:
    url = jar.url(base)
    published = _download(f"{url}.sha1", deadline, request_timeout).decode("ascii", "replace")
    first = published.split()[0].lower() if published.split() else "(empty)"
    if first != jar.sha1:
        raise KafkaToolingError(
            f"{url}.sha1 publishes SHA-1 {first} for {jar.coordinates}, but the lock list says "
            f"{jar.sha1}: refusing the jar (the repository serves other bytes than the lock was "
            f"made from; use Maven Central ({REPOSITORY_ENV_VAR} unset) or a faithful mirror)"
        )
    body = _download(url, deadline, request_timeout)
    actual = hashlib.sha1(body, usedforsecurity=False).hexdigest()
    if actual != jar.sha1:
        raise KafkaToolingError(
            f"{url} gave bytes of SHA-1 {actual}, but its .sha1 and the lock list say "
            f"{jar.sha1} for {jar.coordinates}: refusing the jar (a damaged download or a "
            "tampered repository); fetch again, from Maven Central if a mirror served it"
        )
    (folder / jar.file_name).write_bytes(body)


def _download(url: str, deadline: float, request_timeout: float) -> bytes:
    """The body of ``url``; a connection or read stalled for ``request_timeout`` seconds, or
    the whole fetch's ``deadline`` passing, fails (the message names the URL)."""
    chunks: list[bytes] = []
    try:
        with urllib.request.urlopen(url, timeout=request_timeout) as response:
            while chunk := response.read(_CHUNK):
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise TimeoutError("the fetch's deadline passed (timeout of the whole fetch)")
    except urllib.error.HTTPError as exc:
        mirror = os.environ.get(REPOSITORY_ENV_VAR, "").strip() or "unset: Maven Central"
        raise KafkaToolingError(
            f"could not fetch {url}: HTTP {exc.code} {exc.reason}; the lock list names a jar "
            f"the repository does not serve ({REPOSITORY_ENV_VAR}: {mirror})"
        ) from exc
    except (OSError, ValueError) as exc:  # URLError, TimeoutError and other socket errors
        raise KafkaToolingError(
            f"could not fetch {url}: {exc}; the jars are fetched once and need network access to "
            f"Maven Central (or a mirror named by {REPOSITORY_ENV_VAR}; https_proxy is honoured)"
        ) from exc
    return b"".join(chunks)
