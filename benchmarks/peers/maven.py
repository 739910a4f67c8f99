"""The JVM peers' jars, resolved from Maven Central with ``mvn`` into a cache outside the repo.

* Spark's own Kafka source: ``peers/spark/pom.xml`` pins ``spark-sql-kafka-0-10``; its runtime
  jars, minus those the installed PySpark already ships, go on ``spark.jars``.
* ``from_avro``: ``peers/spark-avro/pom.xml`` pins ``spark-avro`` (no dependencies: the installed
  PySpark ships Avro); its jar goes on ``spark.jars`` for :mod:`benchmarks.avro`.
* Flink's Dynamic Kafka Source: ``peers/flink/pom.xml`` pins Flink and ``flink-connector-kafka``
  and builds the small program under ``peers/flink/src``; its jar and runtime jars make the
  classpath.

Both land in ``~/.cache/pyspark-dynamic-kafka/<name>-<digest>/`` (``$XDG_CACHE_HOME`` honoured),
the digest covering the pom (and the program's sources), so a change rebuilds and a rerun is free;
the Flink program is built into its ``program/`` subfolder. The fetching is the test clusters'
own (:func:`pyspark_dynamic_kafka.testing.kafka_jars.maven_jars`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from pyspark_dynamic_kafka.testing.kafka_jars import cache_root, maven_jars

PEERS = Path(__file__).resolve().parent
SPARK_POM = PEERS / "spark" / "pom.xml"
FLINK_POM = PEERS / "flink" / "pom.xml"
SPARK_AVRO_POM = PEERS / "spark-avro" / "pom.xml"
_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


def _resolved(
    name: str,
    pom: Path,
    inputs: list[Path],
    goals: Callable[[Path], Sequence[str]] = lambda jars: (),
) -> Path:
    """The runtime jars of ``pom`` in ``~/.cache/pyspark-dynamic-kafka/<name>-<digest of
    inputs>``, fetched by Maven (run on ``pom`` where it is) on first use."""
    digest = hashlib.sha256()
    for path in sorted(inputs):
        digest.update(path.relative_to(PEERS).as_posix().encode())
        digest.update(path.read_bytes())
    target = cache_root() / f"{name}-{digest.hexdigest()[:12]}"
    return maven_jars(
        pom, target, digest=digest.hexdigest(), goals=goals, in_place=True, what=f"the {name} jars"
    )


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
    jars = _resolved("spark-sql-kafka", SPARK_POM, [SPARK_POM])
    shipped = {artifact(p.name) for p in pyspark_jars.glob("*.jar")}
    return sorted(p for p in jars.glob("*.jar") if artifact(p.name) not in shipped)


def spark_kafka_version() -> str:
    """The ``spark.version`` the Spark peer's pom pins."""
    found = re.search(r"<spark.version>([^<]+)</spark.version>", SPARK_POM.read_text())
    return found.group(1) if found else "?"


def spark_avro_jars() -> list[Path]:
    """spark-avro's jar (``from_avro``), every dependency of it left to the installed PySpark."""
    return sorted(_resolved("spark-avro", SPARK_AVRO_POM, [SPARK_AVRO_POM]).glob("*.jar"))


def spark_avro_version() -> str:
    """The spark-avro version the Avro peer's pom pins."""
    found = re.search(r"<spark-avro.version>([^<]+)<", SPARK_AVRO_POM.read_text())
    return found.group(1) if found else "?"


def flink_classpath() -> str:
    """The classpath of the Flink peer program (built on first use)."""
    sources = sorted((PEERS / "flink" / "src").rglob("*.*"))
    jars = _resolved(
        "flink-bench",
        FLINK_POM,
        [FLINK_POM, *sources],
        lambda jars: [f"-Dbench.build.dir={jars / 'program'}", "package"],
    )
    program = sorted((jars / "program").glob("*.jar"))
    return os.pathsep.join(str(p) for p in [*program, *sorted(jars.glob("*.jar"))])
