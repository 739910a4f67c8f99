"""The Java side of the Apache Kafka test clusters: the ``java`` command and the Kafka jars.

The jars are pinned by ``kafka_pom.xml`` (next to this module): Kafka's ``kafka_2.13`` at
``kafka.version`` with its runtime dependencies, and log4j 2 under SLF4J. ``kafka_jars.lock``
lists that resolved set with each jar's SHA-1 (:mod:`.kafka_lock` regenerates it with Maven).
The jars are fetched once from Maven Central over HTTPS, without Maven, each checked against its
published ``.sha1`` and the lock (:func:`.maven_central.fetch_jars`), into
``~/.cache/pyspark-dynamic-kafka/kafka-<version>/`` (``$XDG_CACHE_HOME`` is honoured), where every
later run finds them: Apache Kafka clusters need ``java`` only, and network on first use.
``python -m pyspark_dynamic_kafka.testing.kafka_jars`` fetches them and prints the folder; ``make
kafka-jars`` runs :mod:`.kafka_cds`, which also builds a class archive. :func:`maven_jars` and
:func:`maven_unpack` fetch other Java projects with Maven (Apicurio Registry, the benchmarks'
JVM peers, spark-avro); those need ``mvn``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from pyspark_dynamic_kafka.testing.errors import ClusterStartError
from pyspark_dynamic_kafka.testing.maven_central import KafkaToolingError, fetch_jars, read_lock

__all__ = [
    "LOCK_PATH",
    "POM_PATH",
    "KafkaToolingError",
    "cache_root",
    "class_archive",
    "ensure_kafka_jars",
    "find_java",
    "jars_cache_dir",
    "kafka_version",
    "maven_jars",
    "maven_unpack",
    "tooling_problem",
]

POM_PATH = Path(__file__).with_name("kafka_pom.xml")
"""The checked-in Maven project that pins the Kafka release and its runtime jars."""

LOCK_PATH = Path(__file__).with_name("kafka_jars.lock")
"""The jars ``POM_PATH`` resolves to, each with its SHA-1 (see :mod:`.maven_central`)."""

_POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
_MARKER = ".complete"
_OUTPUT_TAIL_CHARS = 4000


def kafka_version(pom: Path = POM_PATH) -> str:
    """The Kafka release the pom pins (its ``kafka.version`` property).

    Parameters
    ----------
    pom:
        The Maven project; the packaged ``kafka_pom.xml`` by default.

    Returns
    -------
    str
        For example ``"4.4.0"``.
    """
    node = ET.parse(pom).getroot().find("m:properties/m:kafka.version", _POM_NS)
    if node is None or not (node.text or "").strip():
        raise KafkaToolingError(f"{pom} has no <properties><kafka.version>")
    return (node.text or "").strip()


def jars_cache_dir(version: str | None = None) -> Path:
    """The folder that holds (or will hold) the jars of a Kafka release.

    Parameters
    ----------
    version:
        The Kafka release; the pinned one by default.

    Returns
    -------
    Path
        ``$XDG_CACHE_HOME/pyspark-dynamic-kafka/kafka-<version>`` (``~/.cache`` without it).
    """
    return cache_root() / f"kafka-{version or kafka_version()}"


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/pyspark-dynamic-kafka`` (``~/.cache`` without it): where the jars that
    Maven fetches are kept, outside any checkout."""
    cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache_home) / "pyspark-dynamic-kafka"


def find_java() -> str:
    """The ``java`` command: ``$JAVA_HOME/bin/java`` if it exists, else ``java`` on the PATH.

    Raises
    ------
    KafkaToolingError
        If there is no Java at all.
    """
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(Path(java_home) / "bin" / "java", os.X_OK):
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise KafkaToolingError(
            "Apache Kafka test clusters need Java 17 or newer, but `java` is not on the PATH "
            "and JAVA_HOME is not set; install a JDK (e.g. apt-get install "
            "openjdk-17-jdk-headless), or use the embedded Tansu broker (broker='tansu', or "
            "DYNAMIC_KAFKA_TEST_BROKER=tansu for the test suite), which needs no Java but lacks "
            "some of Kafka's behaviour (see LocalKafkaCluster)"
        )
    return found


def class_archive(java: str, jars: Path) -> Path:
    """Where the class-data sharing archive of ``java`` running the broker from ``jars`` lives.

    The archive (built by :mod:`.kafka_cds`) fits one JVM build and one set of jars only, so
    its name carries a digest of the resolved ``java`` binary (path, size, time) and the jars'
    folder; a JVM or Kafka upgrade simply finds no archive.
    """
    binary = Path(java).resolve() if os.sep in java else Path(shutil.which(java) or java).resolve()
    stat = binary.stat() if binary.exists() else None
    identity = f"{binary}|{stat and stat.st_size}|{stat and stat.st_mtime_ns}|{jars.resolve()}"
    return jars / f"broker-classes-{hashlib.sha256(identity.encode()).hexdigest()[:16]}.jsa"


def tooling_problem() -> str | None:
    """Why Apache Kafka clusters cannot run here, or ``None`` when they can.

    They need ``java`` (and, the first time, network access to Maven Central for the jars,
    which is not probed here). Tests use this as their skip reason.
    """
    try:
        find_java()
    except KafkaToolingError as exc:
        return str(exc)
    return None


def ensure_kafka_jars(timeout: float = 900.0) -> Path:
    """The folder of the pinned Kafka jars, fetching them from Maven Central the first time.

    Every jar of ``kafka_jars.lock`` is fetched over HTTPS and kept only if its bytes have the
    SHA-1 the repository publishes and the lock records (no Maven needed). The folder is filled
    beside its place and renamed into it, with a marker holding the pom's digest; concurrent
    callers (several test processes) wait for one fetch, and the folder is refetched when the
    pom changed since it was filled.

    Parameters
    ----------
    timeout:
        Seconds the whole fetch may take.

    Returns
    -------
    Path
        A folder of jars; the JVM classpath is ``<folder>/*``.

    Raises
    ------
    KafkaToolingError
        If the jars are not cached and a jar cannot be fetched or fails its SHA-1 check (the
        message names the URL), or the lock was not made from the pom.
    """
    target = jars_cache_dir()
    digest = _pom_digest()
    if _cached(target, digest):
        return target
    lock = read_lock(LOCK_PATH)
    if lock.pom_sha256 != digest:
        raise KafkaToolingError(
            f"{LOCK_PATH.name} was made from another {POM_PATH.name} (pom-sha256 "
            f"{lock.pom_sha256}, the pom's is {digest}); regenerate it: make kafka-jars-lock"
        )

    def fill(partial: Path) -> Path:
        jars = partial / "jars"
        jars.mkdir()
        fetch_jars(lock.jars, jars, timeout=timeout)
        return jars

    return _filled_once(target, digest, fill)


def maven_jars(
    pom: Path,
    target: Path,
    *,
    digest: str,
    goals: Callable[[Path], Sequence[str]] = lambda jars: (),
    in_place: bool = False,
    expect: str = "*.jar",
    what: str = "the jars",
    timeout: float = 900.0,
) -> Path:
    """The folder ``target`` holding the runtime jars of the Maven project ``pom``, fetched with
    ``mvn dependency:copy-dependencies`` the first time.

    The folder is filled beside ``target`` and renamed into place, with a marker holding
    ``digest``; a later call finds the marker and returns at once, and a changed ``digest``
    fetches again. Concurrent callers (several test processes) wait for one fetch.

    Parameters
    ----------
    pom:
        The Maven project.
    target:
        The folder of the jars.
    digest:
        What the jars were resolved from (e.g. a digest of ``pom``).
    goals:
        Maven goals and ``-D`` properties to run before the copy, given the folder the jars are
        being copied into (what they build into a subfolder of it moves with it).
    in_place:
        Run Maven on ``pom`` where it is (it builds sources beside it) rather than on a copy in
        a scratch folder.
    expect:
        A file name pattern that at least one fetched file must match.
    what:
        What the jars are, for error messages.
    timeout:
        Seconds Maven may take.

    Raises
    ------
    KafkaToolingError
        If ``mvn`` is missing, fails, takes longer than ``timeout`` or fetches nothing that
        matches ``expect``.
    """

    def fill(partial: Path) -> Path:
        mvn = _mvn(what)
        project = pom if in_place else Path(shutil.copyfile(pom, partial / "pom.xml"))
        jars = partial / "jars"
        command = [mvn, "-q", "-B", "-f", str(project), *goals(jars)]
        command += ["dependency:copy-dependencies", "-DincludeScope=runtime"]
        _run_maven([*command, f"-DoutputDirectory={jars}"], jars, expect, what, timeout)
        return jars

    return _filled_once(target, digest, fill)


def maven_unpack(artifact: str, target: Path, *, expect: str, what: str) -> Path:
    """The folder ``target`` holding the unpacked archive ``artifact`` (Maven coordinates with
    type and classifier), fetched and unpacked with Maven the first time (as :func:`maven_jars`:
    a marker, concurrent callers wait for one fetch).

    Raises
    ------
    KafkaToolingError
        ``mvn`` is missing or fails, or the archive holds no ``expect``.
    """

    def fill(partial: Path) -> Path:
        mvn = _mvn(what)
        unpacked = partial / "unpacked"
        plugin = "org.apache.maven.plugins:maven-dependency-plugin:3.9.0:unpack"
        command = [mvn, "-q", "-B", plugin, f"-Dartifact={artifact}"]
        # The plugin skips an archive its marker files say it unpacked before; without a
        # project those go under the working directory, so each fetch gets its own.
        command += [f"-DmarkersDirectory={partial / 'markers'}"]
        _run_maven([*command, f"-DoutputDirectory={unpacked}"], unpacked, expect, what, 900.0)
        return unpacked

    return _filled_once(target, artifact, fill)


def _mvn(what: str) -> str:
    """The ``mvn`` command, which fetches ``what``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaToolingError(
            f"Maven fetches {what}, but `mvn` is not on the PATH; install Maven 3.6+ "
            "(e.g. apt-get install maven)"
        )
    return mvn


def _filled_once(target: Path, digest: str, fill: Callable[[Path], Path]) -> Path:
    """``target``, filled the first time by ``fill(scratch)`` (which returns the folder it
    filled inside the scratch folder) and moved into place with a marker holding ``digest``;
    concurrent callers wait for one fill, a later call finds the marker."""
    if _cached(target, digest):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target.parent / f"{target.name}.lock"):
        if _cached(target, digest):
            return target
        partial = target.parent / f".{target.name}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        try:
            filled = fill(partial)
            shutil.rmtree(target, ignore_errors=True)
            filled.rename(target)
            (target / _MARKER).write_text(digest + "\n")
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def _run_maven(command: list[str], folder: Path, expect: str, what: str, timeout: float) -> None:
    """Run Maven; it must leave a file matching ``expect`` in ``folder``."""
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise KafkaToolingError(
            f"Maven did not fetch {what} within {timeout:g}s: {' '.join(command)}"
        ) from exc
    if done.returncode != 0 or not list(folder.glob(expect)):
        output = (done.stdout + done.stderr)[-_OUTPUT_TAIL_CHARS:]
        raise KafkaToolingError(
            f"Maven could not fetch {what} (exit code {done.returncode}); it needs "
            f"Maven Central or a mirror in ~/.m2/settings.xml.\ncommand: {' '.join(command)}\n"
            f"output:\n{output}"
        )


def _cached(folder: Path, digest: str) -> bool:
    marker = folder / _MARKER
    return marker.is_file() and marker.read_text().strip() == digest


def _pom_digest() -> str:
    return hashlib.sha256(POM_PATH.read_bytes()).hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl  # POSIX only, like the Kafka clusters themselves

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def run_tool(make: Callable[[], Path]) -> int:
    """Run a command-line step that makes a file: print its path, or the error; exit code."""
    try:
        made = make()
    except ClusterStartError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    sys.stdout.write(f"{made}\n")
    return 0


def main() -> int:
    """Check for ``java``, fetch the jars, print their folder (``make kafka-jars`` runs
    :func:`.kafka_cds.main`, which does this and more)."""
    return run_tool(lambda: (find_java(), ensure_kafka_jars())[1])


if __name__ == "__main__":
    sys.exit(main())
