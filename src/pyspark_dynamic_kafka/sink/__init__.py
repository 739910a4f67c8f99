"""The Spark data sink: write a logical stream to the cluster its metadata routes writes to.

Every module, by role (sub-layers enforced by tests/unit/test_structure.py; this map by
tests/unit/test_module_map.py):

- :mod:`~pyspark_dynamic_kafka.sink.route`: metadata -> :class:`WriteRoute` (pure): the entry
  marked ``write: true``, else the stream's only cluster, else "ambiguous write route".
- :mod:`~pyspark_dynamic_kafka.sink.config.options`: every sink option declared once,
  :class:`SinkOptions`.
- :mod:`~pyspark_dynamic_kafka.sink.config.avro_format`: ``valueFormat=avro`` / ``keyFormat``:
  how their options (:mod:`pyspark_dynamic_kafka.avro.options`) combine, :class:`AvroFormat`.
- :mod:`~pyspark_dynamic_kafka.sink.executor.task`: the driver -> executor contract,
  :class:`WriteTask` (route, producer properties) and :class:`WriteReport` (what a task wrote).
- :mod:`~pyspark_dynamic_kafka.sink.executor.produce`: one task's Arrow batches -> records,
  flushed and checked before the task ends (atLeastOnce), with the producer
  (:class:`~pyspark_dynamic_kafka.engines.roles.BatchProducer`) of the engine the driver chose
  by the ``writer`` option (:mod:`pyspark_dynamic_kafka.engines.choice`): confluent-kafka's or
  the compiled core's (Arrow columns straight to librdkafka), one path for both.
- :mod:`~pyspark_dynamic_kafka.sink.executor.transaction`: exactlyOnce: one transaction per
  task with a fixed ``transactional.id`` and a progress marker committed inside it, one
  :class:`~pyspark_dynamic_kafka.engines.roles.Transaction` over either producer.
- :mod:`~pyspark_dynamic_kafka.sink.executor.markers`: exactlyOnce's progress markers: the
  query that wrote each, where a task looks them up, whether its micro-batch is a replay or
  another query holds the ``sinkId``.
- :mod:`~pyspark_dynamic_kafka.sink.executor.avro_columns`: the ``value`` / ``key`` column
  written as Avro encoded (schema ids of the route's registry) before either producer runs.
- :mod:`~pyspark_dynamic_kafka.sink.driver.plan`: when a batch (or micro-batch) starts, read the
  metadata and resolve its route.
- :mod:`~pyspark_dynamic_kafka.sink.driver.schemas`: with Avro, each topic's writer schema and
  its id in the registry of the route's cluster (registered or looked up, cached).
- :mod:`~pyspark_dynamic_kafka.sink.metrics`: what a micro-batch wrote (:class:`BatchWrite`),
  handed from ``commit`` to the monitoring listener.
- :mod:`~pyspark_dynamic_kafka.sink.writer`: the batch and stream writers Spark calls.
- :mod:`~pyspark_dynamic_kafka.sink.rows`: the stream writer's base class (Arrow batches, or on
  PySpark 4.0 Spark's rows made into them).

The ``dynamic_kafka`` format's class is :mod:`pyspark_dynamic_kafka.datasource`, above this
package and :mod:`pyspark_dynamic_kafka.source`.
"""
