"""A secure first job: two SASL_SSL clusters, one SCRAM and one PLAIN, passwords by reference
(an environment variable and a properties file, never in the metadata), read into a table while
the stream moves from one cluster to the other (docs/coming-from-kafka.md, "Coming from
format("kafka")").

Run it with the project's Python: ``.venv/bin/python examples/secure_job.py``. It starts two
Apache Kafka clusters with TLS and SASL listeners (needs Java 17 and, once, Maven: ``make
kafka-jars``). The test suite runs it (tests/integration/test_newcomer.py) and checks that
docs/coming-from-kafka.md shows it.
"""

# --- docs/coming-from-kafka.md: secure job ---
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark_dynamic_kafka.testing import (
    local_spark_session,
    plain_client_properties,
    sasl_ssl_scram_client_properties,
    set_scram_password,
    start_clusters,
)
from pyspark_dynamic_kafka.testing.kafka_config import PLAIN_PASSWORD

work = Path(tempfile.mkdtemp(prefix="secure-job-"))

# The secrets, where a deployment keeps them: east's in an environment variable (set before the
# Spark session starts: its Python workers inherit it), west's in a Java properties file.
os.environ.setdefault("EAST_KAFKA_PASSWORD", secrets.token_hex(16))
secrets_file = work / "kafka-secrets.properties"
secrets_file.write_text(f"west.password={PLAIN_PASSWORD}\n")  # west's PLAIN user (the kit's)

# Two throw-away Apache Kafka clusters with SASL_SSL listeners (a self-signed certificate).
with start_clusters(["east", "west"], "kafka", tls=True, scram=True) as clusters:
    east, west = clusters["east"], clusters["west"]
    set_scram_password(east, "orders-reader", os.environ["EAST_KAFKA_PASSWORD"])
    for cluster in (east, west):
        cluster.create_topic("orders", partitions=2)
    east.produce("orders", [(f"k{i}", str(i)) for i in range(100)])  # order ids 0..99

    # The metadata: each cluster's SASL_SSL client properties, its password by reference.
    metadata = work / "streams.json"
    east_password = "${env:EAST_KAFKA_PASSWORD}"
    west_password = f"${{file:{secrets_file}:west.password}}"
    document = {
        "clusters": {
            "east": sasl_ssl_scram_client_properties(
                east, "orders-reader", east_password, "SCRAM-SHA-512"
            ),
            "west": plain_client_properties(west, password=west_password),
        },
        "streams": {"orders": [{"cluster": "east", "topics": ["orders"]}]},
    }
    metadata.write_text(json.dumps(document, indent=2))
    check = [sys.executable, "-m", "pyspark_dynamic_kafka", "validate", "--metadata", str(metadata)]
    subprocess.run(check, check=True)  # as `dynamic-kafka validate --metadata streams.json`

    spark = local_spark_session("secure-job")  # after the variable is set: workers inherit it
    source = {
        "metadataService": "file",
        "metadataService.path": str(metadata),
        "streamIds": "orders",
        "startingOffsets": "earliest",
        "metadataDiscoveryIntervalMs": "1000",
    }
    query = (
        spark.readStream.format("dynamic_kafka")
        .options(**source)
        .load()
        .selectExpr("cluster", "CAST(CAST(value AS STRING) AS INT) AS id")
        .writeStream.format("memory")  # a table of the session, for this example
        .queryName("secure_orders")
        .start()
    )

    def orders_read(count: int) -> list:
        """The rows of ``secure_orders`` once it holds ``count`` (waiting at most 5 minutes)."""
        deadline = time.monotonic() + 300
        while len(rows := spark.table("secure_orders").collect()) < count:
            if query.exception() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{len(rows)} orders, not {count}: {query.exception()}")
            time.sleep(0.5)
        return rows

    orders_read(100)  # east's 100 orders are read

    # The producers switch to west; then the stream moves there, while the query runs.
    west.produce("orders", [(f"k{i}", str(i)) for i in range(100, 150)])
    move = f"move orders --from east --to west --metadata {metadata}"
    subprocess.run([sys.executable, "-m", "pyspark_dynamic_kafka", *move.split()], check=True)
    rows = orders_read(150)  # and west's 50

    query.stop()
    per_cluster = {c: sum(1 for r in rows if r.cluster == c) for c in ("east", "west")}
    print(f"secure job: {len(rows)} orders {per_cluster}, {len({r.id for r in rows})} distinct ids")
    spark.stop()
