"""Jars fetched over HTTP without Maven (testing/maven_central.py), from a repository served on
127.0.0.1 by this test: a jar is kept only when its bytes, its published .sha1 and the lock list
agree. Also the checked-in lock of the Kafka jars against the pom it was made from."""

from __future__ import annotations

import hashlib
import http.server
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyspark_dynamic_kafka.testing.kafka_jars import LOCK_PATH, POM_PATH, kafka_version
from pyspark_dynamic_kafka.testing.kafka_lock import HEADER, parse_dependency_list
from pyspark_dynamic_kafka.testing.maven_central import (
    JarLock,
    KafkaToolingError,
    LockedJar,
    fetch_jars,
    read_lock,
    render_lock,
)

JAR = b"PK\x03\x04 the bytes of a jar"
OTHER = b"PK\x03\x04 other bytes"


def _sha1(data: bytes) -> str:
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()


class _Repository:
    """A Maven repository over HTTP on 127.0.0.1: ``files`` maps a path to the bytes served."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requested: list[str] = []
        files, requested = self.files, self.requested

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                requested.append(self.path)
                body = files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/maven2/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def publish(self, jar: LockedJar, body: bytes, sha1: str) -> None:
        path = "/" + jar.url(self.url).split("/", 3)[3]
        self.files[path] = body
        self.files[f"{path}.sha1"] = f"{sha1}  {jar.file_name}\n".encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def repository(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Repository]:
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    served = _Repository()
    yield served
    served.close()


LOCKED = LockedJar("org.example.kit", "broker", "1.2.3", _sha1(JAR))


def test_a_jar_whose_three_sha1s_agree_is_kept(repository: _Repository, tmp_path: Path) -> None:
    repository.publish(LOCKED, JAR, _sha1(JAR))
    fetch_jars([LOCKED], tmp_path, repository_url=repository.url)
    assert (tmp_path / "broker-1.2.3.jar").read_bytes() == JAR
    assert sorted(repository.requested) == [
        "/maven2/org/example/kit/broker/1.2.3/broker-1.2.3.jar",
        "/maven2/org/example/kit/broker/1.2.3/broker-1.2.3.jar.sha1",
    ]


def test_a_published_sha1_other_than_the_locked_one_is_refused(
    repository: _Repository, tmp_path: Path
) -> None:
    """A tampered repository serving other bytes with a .sha1 that fits them."""
    repository.publish(LOCKED, OTHER, _sha1(OTHER))
    url = LOCKED.url(repository.url)
    with pytest.raises(KafkaToolingError) as info:
        fetch_jars([LOCKED], tmp_path, repository_url=repository.url)
    assert str(info.value).startswith(f"{url}.sha1 publishes SHA-1 {_sha1(OTHER)}")
    assert f"the lock list says {LOCKED.sha1}: refusing the jar" in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_bytes_other_than_the_sha1_says_are_refused(
    repository: _Repository, tmp_path: Path
) -> None:
    """The right .sha1 beside other bytes (a damaged download, or a mirror that lies)."""
    repository.publish(LOCKED, OTHER, LOCKED.sha1)
    url = LOCKED.url(repository.url)
    with pytest.raises(KafkaToolingError) as info:
        fetch_jars([LOCKED], tmp_path, repository_url=repository.url)
    assert str(info.value).startswith(f"{url} gave bytes of SHA-1 {_sha1(OTHER)}")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_jar_names_its_url(repository: _Repository, tmp_path: Path) -> None:
    url = LOCKED.url(repository.url)
    with pytest.raises(KafkaToolingError, match=f"^could not fetch {url}.sha1: HTTP 404"):
        fetch_jars([LOCKED], tmp_path, repository_url=repository.url)


def test_a_lock_list_reads_back_as_written(tmp_path: Path) -> None:
    jars = (LOCKED, LockedJar("org.example", "native", "2.0", "a" * 40, "linux-x86_64"))
    lock = tmp_path / "jars.lock"
    lock.write_text(render_lock(JarLock("f" * 64, jars), ["a comment"]))
    assert read_lock(lock) == JarLock("f" * 64, tuple(sorted(jars, key=lambda j: j.coordinates)))
    assert jars[1].file_name == "native-2.0-linux-x86_64.jar"
    lock.write_text("pom-sha256 " + "f" * 64 + "\norg.example:broker 0123\n")
    with pytest.raises(KafkaToolingError, match=r"jars\.lock:2: 'org\.example:broker 0123' is not"):
        read_lock(lock)


def test_the_kafka_lock_was_made_from_the_pom_and_holds_what_it_pins() -> None:
    """kafka_pom.xml changed without `make kafka-jars-lock` fails here (its digest is in the
    lock); the jars the pom names directly are in it at the pom's versions."""
    lock = read_lock(LOCK_PATH)
    assert lock.pom_sha256 == hashlib.sha256(POM_PATH.read_bytes()).hexdigest()
    namespace = {"m": "http://maven.apache.org/POM/4.0.0"}
    log4j = ET.parse(POM_PATH).getroot().findtext("m:properties/m:log4j.version", "", namespace)
    coordinates = {j.coordinates for j in lock.jars}
    assert {
        f"org.apache.kafka:kafka_2.13:{kafka_version()}",
        f"org.apache.kafka:kafka-clients:{kafka_version()}",
        f"org.apache.logging.log4j:log4j-core:{log4j}",
        f"org.apache.logging.log4j:log4j-slf4j-impl:{log4j}",
    } <= coordinates
    assert len({j.file_name for j in lock.jars}) == len(lock.jars)  # one folder holds them all
    assert LOCK_PATH.read_text().startswith("".join(f"# {line}\n" for line in HEADER))


def test_maven_dependency_list_lines_are_read() -> None:
    text = (
        "The following files have been resolved:\n"
        "   org.apache.kafka:kafka-clients:jar:4.4.0:compile:/m2/kafka-clients-4.4.0.jar"
        " -- module kafka.clients (auto)\n"
        "   org.example:native:jar:linux:2.0:runtime:/m2/native-2.0-linux.jar\n"
        "\n"
    )
    assert parse_dependency_list(text) == [
        (
            LockedJar("org.apache.kafka", "kafka-clients", "4.4.0", ""),
            Path("/m2/kafka-clients-4.4.0.jar"),
        ),
        (LockedJar("org.example", "native", "2.0", "", "linux"), Path("/m2/native-2.0-linux.jar")),
    ]
    with pytest.raises(KafkaToolingError, match="is not a jar with a file"):
        parse_dependency_list("   org.example:bom:pom:1.0:import:/m2/bom-1.0.pom\n")
