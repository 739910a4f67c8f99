"""Avro values: the Spark columns an Avro schema decodes into (:mod:`.spark_types`)."""
