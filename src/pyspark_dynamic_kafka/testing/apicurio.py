"""Apicurio Registry, a real schema registry for tests, through its Confluent-compatible API.

Apicurio Registry 2.6.13.Final is on Maven Central already built
(``io.apicurio:apicurio-registry-app:2.6.13.Final:tar.gz:all``: a Quarkus application, its
``-runner.jar`` beside ``lib/``), with in-memory storage by default. It is fetched once with
Maven into ``~/.cache/pyspark-dynamic-kafka/apicurio-<version>/``, as the Kafka jars are
(:mod:`.kafka_jars`), and each :class:`ApicurioRegistry` is one Java process bound to loopback,
ready when its ``/health/ready`` answers. Its Confluent-compatible API (``/apis/ccompat/v7``) is
the :attr:`~ApicurioRegistry.url` that Confluent's clients and a cluster's
``schema.registry.url`` are given.

What differs from Confluent's registry (verified, ``../shared/notes/production-estate.md``): no
``/schemas/guids/{guid}`` endpoint, ids shared by every subject of the registry and starting at
1 in each, the compatibility level ``NONE`` by default, and authentication only through an OIDC
server (none here). :meth:`~ApicurioRegistry.down` makes it stop answering while keeping what it
holds (the process is paused, as a registry that hangs does).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.testing.errors import ClusterStartError, free_ports
from pyspark_dynamic_kafka.testing.kafka_jars import cache_root, find_java, maven_unpack

__all__ = ["APICURIO_VERSION", "ApicurioRegistry", "ensure_apicurio"]

APICURIO_VERSION = "2.6.13.Final"
_ARTIFACT = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all"
_RUNNER = f"apicurio-registry-app-{APICURIO_VERSION}-runner.jar"
_JSON = "application/vnd.schemaregistry.v1+json"
#: A small registry: it starts in 3-5 s with these, in about 230 MB.
_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
_START_TIMEOUT_S = 180.0


def ensure_apicurio() -> Path:
    """The folder holding Apicurio Registry's runner jar, fetched with Maven the first time.

    Raises
    ------
    KafkaToolingError
        ``mvn`` is missing or could not fetch it.
    """
    target = cache_root() / f"apicurio-{APICURIO_VERSION}"
    return maven_unpack(_ARTIFACT, target, expect=_RUNNER, what="Apicurio Registry")


class ApicurioRegistry:
    """One Apicurio Registry process on a free loopback port (a context manager).

    Parameters
    ----------
    first_id:
        Ids this registry issues start here: ``first_id - 1`` schemas are registered under a
        subject of their own at start (Apicurio's ids start at 1 in every registry), so that
        two registries give the same schema different ids, as real estates' registries do.
    """

    def __init__(self, first_id: int = 1) -> None:
        self.first_id = first_id
        self.port = free_ports(1)[0]
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    @property
    def url(self) -> str:
        """The base URL of its Confluent-compatible API."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def start(self) -> ApicurioRegistry:
        """Start the process and wait until it is ready."""
        folder = ensure_apicurio()
        handle, name = tempfile.mkstemp(prefix="apicurio-", suffix=".log")
        os.close(handle)
        self._log = Path(name)
        command = [
            find_java(),
            *_JVM_OPTIONS,
            "-Dquarkus.http.host=127.0.0.1",
            f"-Dquarkus.http.port={self.port}",
            "-jar",
            str(folder / _RUNNER),
        ]
        with open(self._log, "wb") as log:
            self._process = subprocess.Popen(
                command, cwd=folder, stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_ready()
        for n in range(1, self.first_id):
            filler = {"type": "record", "name": f"Filler{n}", "fields": []}
            self.register("_first_id_filler", json.dumps(filler))
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        health = f"http://127.0.0.1:{self.port}/health/ready"
        while True:
            process = self._process
            if process is None or process.poll() is not None:
                raise ClusterStartError(f"Apicurio Registry exited at start: {self._log_tail()}")
            with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=2) as answer:
                if answer.status == 200:
                    return
            if time.monotonic() > deadline:
                raise ClusterStartError(
                    f"Apicurio Registry was not ready within {_START_TIMEOUT_S:g} s: "
                    f"{self._log_tail()}"
                )
            time.sleep(0.2)

    def _log_tail(self) -> str:
        return self._log.read_text(errors="replace")[-3000:] if self._log else ""

    def stop(self) -> None:
        """Stop the process (also when it is paused by :meth:`down`)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        if self._log is not None:
            self._log.unlink(missing_ok=True)

    def __enter__(self) -> ApicurioRegistry:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """The registry stops answering (its process paused: connections are accepted, no
        request is answered) and comes back as it was."""
        process = self._process
        if process is None:
            raise RuntimeError("the registry is not running")
        process.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            process.send_signal(signal.SIGCONT)

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject``; its id."""
        body = {"schema": schema, "schemaType": schema_type}
        return int(self.answer("POST", f"/subjects/{subject}/versions", body)["id"])

    def answer(self, method: str, path: str, body: Any) -> Any:
        """The JSON answer of the Confluent-compatible API to one request.

        Raises
        ------
        urllib.error.HTTPError
            For an error answer.
        """
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": _JSON}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read())
