"""The pipeline's definitions (docs/pipelines.md, "Declarative Pipelines"): logical stream
``orders``, Avro on whichever clusters the metadata lists, into streaming table ``orders``; the
table, as JSON, into logical stream ``orders-json``, exactly once.

``spark-pipelines run`` imports this file; every run reads what the stream holds when the run
starts (Spark runs each streaming flow with ``Trigger.AvailableNow``) and continues from the
checkpoints the engine keeps under the spec's ``storage``.
"""

# --- docs/pipelines.md: pipeline ---
from pyspark import pipelines as dp
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

spark = SparkSession.active()
service = {
    "metadataService": "file",
    "metadataService.path": spark.conf.get("dynamic_kafka.metadata"),
}


@dp.table(comment="Logical stream 'orders', each record decoded with its cluster's registry")
def orders() -> DataFrame:
    return (
        spark.readStream.format("dynamic_kafka")
        .options(**service)
        .option("streamIds", "orders")
        .option("startingOffsets", "earliest")
        .option("metadataDiscoveryIntervalMs", "0")  # follow a move at every micro-batch
        .option("maxOffsetsPerTrigger", spark.conf.get("dynamic_kafka.maxOffsetsPerTrigger"))
        .option("valueFormat", "avro")
        .option("valueSubject", "orders-value")
        # Every run restarts the flow: keep the first run's reader schema (and the columns)
        .option("schemaTrackingLocation", spark.conf.get("dynamic_kafka.schemaTracking"))
        .load()
        .select("cluster", "partition", "offset", "value.*", "valueSchemaId")
    )


dp.create_sink(
    "orders_json",
    format="dynamic_kafka",
    options={
        **service,
        "streamId": "orders-json",
        "deliveryGuarantee": "exactlyOnce",
        "sinkId": "orders-pipeline",  # this flow's own, kept across runs
    },
)


@dp.append_flow(target="orders_json")
def orders_to_json() -> DataFrame:
    return spark.readStream.table("orders").select(
        F.col("id").cast("string").alias("key"),
        F.to_json(F.struct("id", "item", "cluster", "valueSchemaId")).alias("value"),
    )
