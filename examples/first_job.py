"""Your first job: read a logical stream, parse its JSON into columns, write Parquet, and move
the stream to another cluster while the query runs (README, "Your first job").

Run it with the project's Python, activated or not: ``.venv/bin/python examples/first_job.py``
(Apache Kafka clusters; ``tansu`` as argument: the embedded Tansu brokers instead).
The test suite runs it (tests/integration/test_newcomer.py) and checks that the README shows it.
"""

# --- README: first job ---
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyspark.sql import functions as F

from pyspark_dynamic_kafka.testing import local_spark_session, start_clusters

broker = sys.argv[1] if len(sys.argv) > 1 else "kafka"  # or "tansu": embedded, no broker JVM
work = Path(tempfile.mkdtemp(prefix="first-job-"))

# Two throw-away clusters; with your own, skip this and write their bootstrap.servers below.
with start_clusters(["east", "west"], broker) as clusters:
    east, west = clusters["east"], clusters["west"]
    for cluster in (east, west):
        cluster.create_topic("orders", partitions=2)
    east.produce("orders", [(f"k{i}", f'{{"id": {i}, "amount": {i}.5}}') for i in range(100)])

    # The metadata: stream "orders" is topic "orders" on east.
    metadata = work / "streams.yaml"
    metadata.write_text(
        f"clusters:\n"
        f"  east:\n    bootstrap.servers: {east.bootstrap_servers}\n"
        f"  west:\n    bootstrap.servers: {west.bootstrap_servers}\n"
        f"streams:\n"
        f"  orders:\n"
        f"    - cluster: east  # the cluster the stream lives on today\n"
        f"      topics: [orders]\n"
    )

    spark = local_spark_session("first-job")  # its Python workers run this Python
    orders = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", str(metadata))
        .option("streamIds", "orders")
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "1000")  # look for metadata changes every second
        .load()
        .select(
            "cluster",
            F.from_json(F.col("value").cast("string"), "id INT, amount DOUBLE").alias("o"),
        )
        .select("cluster", "o.id", "o.amount")
    )
    query = (
        orders.writeStream.format("parquet")
        .option("path", str(work / "orders"))
        .option("checkpointLocation", str(work / "checkpoint"))
        .trigger(processingTime="1 second")
        .start()
    )

    def wait_for(count: int) -> None:
        """Wait until the Parquet output holds ``count`` orders (at most 5 minutes)."""
        deadline = time.monotonic() + 300
        while (
            query.lastProgress is None or spark.read.parquet(str(work / "orders")).count() < count
        ):
            if not query.isActive or time.monotonic() > deadline:
                raise RuntimeError(f"no {count} orders yet: {query.exception()}")
            time.sleep(0.5)

    wait_for(100)  # east's 100 orders are written

    # The producers switch to west; then the stream moves there, while the query runs.
    west.produce("orders", [(f"k{i}", f'{{"id": {i}, "amount": {i}.5}}') for i in range(100, 150)])
    move = f"move orders --from east --to west --metadata {metadata}"
    subprocess.run([sys.executable, "-m", "pyspark_dynamic_kafka", *move.split()], check=True)
    # the same as, in a shell: dynamic-kafka move orders --from east --to west --metadata ...
    wait_for(150)  # and west's 50

    query.stop()
    result = spark.read.parquet(str(work / "orders"))
    rows = result.collect()
    per_cluster = {c: sum(1 for r in rows if r.cluster == c) for c in ("east", "west")}
    print(f"first job: {len(rows)} orders {per_cluster}, {len({r.id for r in rows})} distinct ids")
    spark.stop()
