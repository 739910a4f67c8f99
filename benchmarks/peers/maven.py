"""The JVM peers' jars, resolved from Maven Central with ``mvn`` into a cache outside the repo.

* Spark's own Kafka source: ``peers/spark/pom.xml`` pins ``spark-sql-kafka-0-10``; its runtime
  jars, minus those the installed PySpark already ships, go on ``spark.jars``.
* Flink's Dynamic Kafka Source: ``peers/flink/pom.xml`` pins Flink and ``flink-connector-kafka``
  and builds the small program under ``peers/flink/src``; its jar and runtime jars make the
  classpath.

Both land in ``~/.cache/pyspark-dynamic-kafka/<name>-<digest>/`` (``$XDG_CACHE_HOME`` honoured),
the digest covering the pom (and the program's sources), so a change rebuilds and a rerun is free.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

PEERS = Path(__file__).resolve().parent
SPARK_POM = PEERS / "spark" / "pom.xml"
FLINK_POM = PEERS / "flink" / "pom.xml"
_DONE = ".complete"
_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def cache_dir(name: str, inputs: list[Path]) -> Path:
    """``~/.cache/pyspark-dynamic-kafka/<name>-<digest of inputs>``."""
    digest = hashlib.sha256()
    for path in sorted(inputs):
        digest.update(path.relative_to(PEERS).as_posix().encode())
        digest.update(path.read_bytes())
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(home) / "pyspark-dynamic-kafka" / f"{name}-{digest.hexdigest()[:12]}"


def _mvn(pom: Path, *goals: str, timeout: float = 900.0) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise SystemExit("the JVM peers need Maven (`mvn`) to fetch their jars; install maven")
    command = [mvn, "-q", "-B", "-f", str(pom), *goals]
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        tail = (done.stdout + done.stderr)[-4000:]
        raise SystemExit(f"`{' '.join(command)}` failed ({done.returncode}):\n{tail}")


def _resolved(target: Path, pom: Path, *goals: str) -> Path:
    """Run Maven into ``target/jars`` once; later calls find the marker and return at once."""
    if (target / _DONE).is_file():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    _mvn(
        pom,
        *goals,
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={target / 'jars'}",
    )
    (target / _DONE).write_text("ok\n")
    return target


def artifact(jar: str) -> str:
    """``kafka-clients-3.9.2.jar`` -> ``kafka-clients`` (the name without the version)."""
    found = _VERSIONED.match(jar)
    return found.group("artifact") if found else jar


def spark_kafka_jars(pyspark_jars: Path) -> list[Path]:
    """The jars that make ``format("kafka")`` work on the installed PySpark.

    Parameters
    ----------
    pyspark_jars:
        The ``jars`` folder of the installed pyspark: artifacts found there are left out (the
        running Spark has its own version of them).
    """
    target = _resolved(cache_dir("spark-sql-kafka", [SPARK_POM]), SPARK_POM)
    shipped = {artifact(p.name) for p in pyspark_jars.glob("*.jar")}
    return sorted(p for p in (target / "jars").glob("*.jar") if artifact(p.name) not in shipped)


def spark_kafka_version() -> str:
    """The ``spark.version`` the Spark peer's pom pins."""
    found = re.search(r"<spark.version>([^<]+)</spark.version>", SPARK_POM.read_text())
    return found.group(1) if found else "?"


def flink_classpath() -> str:
    """The classpath of the Flink peer program (built on first use)."""
    sources = sorted((PEERS / "flink" / "src").rglob("*.*"))
    target = cache_dir("flink-bench", [FLINK_POM, *sources])
    _resolved(target, FLINK_POM, f"-Dbench.build.dir={target / 'build'}", "package")
    program = sorted((target / "build").glob("*.jar"))
    return os.pathsep.join(str(p) for p in [*program, *sorted((target / "jars").glob("*.jar"))])
