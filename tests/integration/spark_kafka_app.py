"""Spark's own kafka source (``format("kafka")``) reading a topic, in a Spark of its own: the
reference a test compares the dynamic_kafka source with.

Usage: python spark_kafka_app.py JARS BOOTSTRAP TOPIC ENDING_OFFSETS_JSON

JARS is the ``spark.jars`` list (comma-separated) that makes ``format("kafka")`` work on the
installed PySpark (``benchmarks.peers.maven.spark_kafka_jars``); it goes on a session of this
process's own, since a running session cannot take a data source's jars. Two batch reads of
TOPIC from its earliest offsets: to ENDING_OFFSETS_JSON, then to the latest. Prints one JSON
document: ``rows`` (the first read's rows, sorted: key and value as hex, the timestamp as
microseconds since the epoch) and ``failure`` (the second read's error, or ``null``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark_dynamic_kafka.testing import local_spark_session

#: The source's columns, the timestamp as its microseconds (exactly what Spark holds).
COLUMNS = (
    "key",
    "value",
    "topic",
    "partition",
    "offset",
    "unix_micros(timestamp) AS micros",
    "timestampType",
)


def rows(df: Any) -> list[list[Any]]:
    """``df``'s rows as :data:`COLUMNS`, bytes as hex, sorted by partition and offset."""
    got = [
        [None if v is None else v.hex() if isinstance(v, bytes | bytearray) else v for v in r]
        for r in df.selectExpr(*COLUMNS).collect()
    ]
    return sorted(got, key=lambda r: (r[3], r[4]))


def main(jars: str, bootstrap: str, topic: str, ending: str) -> None:
    spark = local_spark_session("spark-kafka-reference", **{"spark.jars": jars})
    spark.sparkContext.setLogLevel("ERROR")
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
    }
    before = rows(spark.read.format("kafka").options(**options, endingOffsets=ending).load())
    failure = None
    try:
        spark.read.format("kafka").options(**options, endingOffsets="latest").load().collect()
    except Exception as exc:  # the read of the whole topic is expected to fail
        failure = str(exc)
    print(json.dumps({"rows": before, "failure": failure}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
