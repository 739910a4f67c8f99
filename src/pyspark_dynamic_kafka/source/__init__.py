"""The Spark data source: driver-side planning and executor-side reading.

Entry point:

- :mod:`~pyspark_dynamic_kafka.source.datasource`: :class:`DynamicKafkaDataSource` (the
  ``dynamic_kafka`` format): schema and readers.

Options (driver):

- :mod:`~pyspark_dynamic_kafka.source.config.options`: every option declared once (key, parser,
  default, doc, scope) with :mod:`pyspark_dynamic_kafka.optionspec`; parsing.
- :mod:`~pyspark_dynamic_kafka.source.config.validation`: every rule across options.
- :mod:`~pyspark_dynamic_kafka.source.config.parsed`: :class:`SourceOptions`, the parsed options.

Driver, at each micro-batch (or once for a batch read):

- :mod:`~pyspark_dynamic_kafka.source.driver.discovery`: metadata -> which topics of which clusters.
- :mod:`~pyspark_dynamic_kafka.source.driver.listing`: partitions and offsets of each cluster.
- :mod:`~pyspark_dynamic_kafka.source.positions`: where each partition starts (and ends): the
  option parsers, the rules and the one resolver (model: :mod:`pyspark_dynamic_kafka.position`).
- :mod:`~pyspark_dynamic_kafka.source.driver.reconcile`: checkpointed offsets against what the
  clusters have now: new partitions, removed ones, and the one driver-side data-loss decision.
- :mod:`~pyspark_dynamic_kafka.source.checkpoint`: the checkpointed offset JSON.
- :mod:`~pyspark_dynamic_kafka.source.driver.admission`: admission control
  (``maxOffsetsPerTrigger``, ...).
- :mod:`~pyspark_dynamic_kafka.source.driver.planning`: offset ranges packed into tasks.
- :mod:`~pyspark_dynamic_kafka.source.executor.task`: the driver -> executor contract,
  :class:`ReadTask` (offset ranges, client properties, read settings).
- :mod:`~pyspark_dynamic_kafka.source.driver.status`: what the stream reports for monitoring (with
  its latest offsets) and its structured reconciliation log lines.
- :mod:`~pyspark_dynamic_kafka.source.group.query_commits`: ``commitOffsetsToKafka`` (through
  :mod:`pyspark_dynamic_kafka.source.group.committer`).
- :mod:`~pyspark_dynamic_kafka.source.stream`, :mod:`~pyspark_dynamic_kafka.source.batch`: the
  stream and batch readers Spark calls, built from the modules above.

Executor:

- :mod:`~pyspark_dynamic_kafka.source.executor.read`: reads one task's exact offset ranges.
- :mod:`~pyspark_dynamic_kafka.source.executor.arrow`: turns the records into Arrow batches.
"""
