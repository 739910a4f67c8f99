"""The Spark data source: driver-side planning and executor-side reading.

Entry point:

- :mod:`~pyspark_dynamic_kafka.source.datasource`: :class:`DynamicKafkaDataSource` (the
  ``dynamic_kafka`` format): schema and readers.

Options (driver):

- :mod:`~pyspark_dynamic_kafka.source.options`: every option declared once (key, parser, default,
  doc, scope) with :mod:`pyspark_dynamic_kafka.optionspec`; parsing.
- :mod:`~pyspark_dynamic_kafka.source.rules`: every rule across options.
- :mod:`~pyspark_dynamic_kafka.source.settings`: :class:`SourceOptions`, the parsed options.

Driver, at each micro-batch (or once for a batch read):

- :mod:`~pyspark_dynamic_kafka.source.discovery`: metadata -> which topics of which clusters.
- :mod:`~pyspark_dynamic_kafka.source.listing`: partitions and offsets of each cluster.
- :mod:`~pyspark_dynamic_kafka.source.positions`: where each partition starts (and ends): the
  option parsers, the rules and the one resolver (model: :mod:`pyspark_dynamic_kafka.position`).
- :mod:`~pyspark_dynamic_kafka.source.reconcile`: checkpointed offsets against what the clusters
  have now: new partitions, removed ones, and the one driver-side data-loss decision.
- :mod:`~pyspark_dynamic_kafka.source.offsets`: the checkpointed offset JSON.
- :mod:`~pyspark_dynamic_kafka.source.limits`: admission control (``maxOffsetsPerTrigger``, ...).
- :mod:`~pyspark_dynamic_kafka.source.planning`: offset ranges packed into tasks.
- :mod:`~pyspark_dynamic_kafka.source.task`: the driver -> executor contract, :class:`ReadTask`
  (offset ranges, client properties, read settings).
- :mod:`~pyspark_dynamic_kafka.source.status`: what the stream reports for monitoring (with its
  latest offsets) and its structured reconciliation log lines.
- :mod:`~pyspark_dynamic_kafka.source.committing`: ``commitOffsetsToKafka`` (through
  :mod:`pyspark_dynamic_kafka.kafka.commits`).
- :mod:`~pyspark_dynamic_kafka.source.stream`, :mod:`~pyspark_dynamic_kafka.source.batch`: the
  stream and batch readers Spark calls, built from the modules above.

Executor:

- :mod:`~pyspark_dynamic_kafka.source.read`: reads one task's exact offset ranges.
- :mod:`~pyspark_dynamic_kafka.source.arrow`: turns the records into Arrow batches.
"""
