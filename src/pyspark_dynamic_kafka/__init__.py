"""pyspark-dynamic-kafka: read Kafka streams spread over many clusters from Spark."""
