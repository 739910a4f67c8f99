"""A stand-alone streaming job for restart tests: dynamic_kafka -> checkpointed Parquet.

Usage: python query_app.py METADATA CHECKPOINT OUTPUT STREAM_IDS MODE
MODE is ``run`` (run until killed) or ``drain`` (process what is available, then exit).
"""

from __future__ import annotations

import os
import sys

from pyspark_dynamic_kafka.testing import local_spark_session


def main() -> None:
    metadata, checkpoint, output, stream_ids, mode = sys.argv[1:6]
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = local_spark_session("dynamic-kafka-query-app")
    df = (
        spark.readStream.format("dynamic_kafka")
        .option("metadataService", "file")
        .option("metadataService.path", metadata)
        .option("streamIds", stream_ids)
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "0")
        .load()
        .selectExpr("cluster", "topic", "partition", "offset", "cast(value as string) as value")
    )
    writer = df.writeStream.format("parquet").option("path", output)
    writer = writer.option("checkpointLocation", checkpoint)
    if mode == "drain":
        writer.trigger(availableNow=True).start().awaitTermination()
    else:
        query = writer.trigger(processingTime="300 milliseconds").start()
        print("STARTED", flush=True)
        query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
