"""The Spark data source: driver-side planning and executor-side reading.

Every module, by role (sub-layers, each importing only the ones above it in this list, are
enforced by tests/unit/test_structure.py; this map by tests/unit/test_module_map.py):

Values shared by everything:

- :mod:`~pyspark_dynamic_kafka.source.partition_json`: the one reader of nested
  ``{cluster: {topic: {partition: number}}}`` JSON (checkpoint and options).
- :mod:`~pyspark_dynamic_kafka.source.checkpoint`: :class:`SourceOffset`, the checkpointed offset,
  with the one ``encode``/``decode`` of the offset JSON.
- :mod:`~pyspark_dynamic_kafka.source.contract`: the status and handoff files the source writes
  and the monitoring listener reads.
- :mod:`~pyspark_dynamic_kafka.source.schema`: the source's Spark and Arrow schemas, for
  ``load()``, the driver and executors (what they need of Arrow: no builders, no
  ``pyarrow.compute``).

Options (``config/``, parsed once on the driver; no Kafka call):

- :mod:`~pyspark_dynamic_kafka.source.config.options`: every option declared once (key, parser,
  default, doc, scope) with :mod:`pyspark_dynamic_kafka.optionspec`; parsing.
- :mod:`~pyspark_dynamic_kafka.source.config.validation`: every rule across options.
- :mod:`~pyspark_dynamic_kafka.source.config.spark_kafka`: what a query moved over from Spark's
  ``format("kafka")`` meets: Spark's option names pointed at ours, the ``kafka.*`` keys refused.
- :mod:`~pyspark_dynamic_kafka.source.config.position_options`: the parsers of the starting and
  ending options.
- :mod:`~pyspark_dynamic_kafka.source.config.archive_options`: the ``archive.*`` options.
- :mod:`~pyspark_dynamic_kafka.source.config.formats`: ``keyFormat``/``valueFormat`` and the Avro
  options that go with them (:class:`ColumnFormat`).
- :mod:`~pyspark_dynamic_kafka.source.config.parsed`: :class:`SourceOptions`, the parsed options,
  and :class:`AssignmentMode`.

Executor (``executor/``: what runs on executors only):

- :mod:`~pyspark_dynamic_kafka.source.executor.task`: the driver -> executor contract,
  :class:`ReadTask` (offset ranges, client properties, read settings).
- :mod:`~pyspark_dynamic_kafka.source.executor.planned`: any task the source planned, read: the
  one dispatch Spark's readers call (Kafka ranges, or a phase task such as the archive's files).
- :mod:`~pyspark_dynamic_kafka.source.executor.read`: reads one task's exact offset ranges,
  each cluster with the range reader of the engine the driver planned for it
  (:mod:`pyspark_dynamic_kafka.engines`: the Python reader and the compiled core's, which turn
  the records into Arrow batches; the decision is :mod:`pyspark_dynamic_kafka.engines.choice`).
- :mod:`~pyspark_dynamic_kafka.source.executor.avro_columns`: Avro keys and values decoded as
  they are read (by the compiled core inside its read, where it decodes them), with the
  registry of the cluster each batch came from.
- :mod:`~pyspark_dynamic_kafka.source.executor.archive`: a hybrid read's archive task, its
  Parquet files read as the source's rows (planned by ``archive/``).

Driver, at each micro-batch or once for a batch read (``driver/``):

- :mod:`~pyspark_dynamic_kafka.source.driver.discovery`: metadata -> which topics of which
  clusters (:class:`Subscription`).
- :mod:`~pyspark_dynamic_kafka.source.driver.listing`: partitions and offsets of each cluster.
- :mod:`~pyspark_dynamic_kafka.source.driver.start_policy`: where each partition starts (and
  ends): the whole precedence as one :class:`StartPolicy`, the rules and the one resolver.
- :mod:`~pyspark_dynamic_kafka.source.driver.named_offsets`: what the offset JSON options name,
  checked against what the query reads when they apply.
- :mod:`~pyspark_dynamic_kafka.source.driver.reconcile`: checkpointed offsets against what the
  clusters have now: new partitions, removed ones, and the one driver-side data-loss decision.
- :mod:`~pyspark_dynamic_kafka.source.driver.went_back`: offsets that went back, told apart by
  topic id: a recreated topic is read from its earliest offset, a truncated log from its end.
- :mod:`~pyspark_dynamic_kafka.source.driver.cluster_view`: metadata, listing and
  reconciliation of one reader, with their log lines.
- :mod:`~pyspark_dynamic_kafka.source.driver.retention`: offsets of removed clusters and topics
  (``removedClusterRetentionMs``) and of archived partitions not assigned yet.
- :mod:`~pyspark_dynamic_kafka.source.driver.admission`: admission control
  (``maxOffsetsPerTrigger``, ...).
- :mod:`~pyspark_dynamic_kafka.source.driver.task_packing`: offset ranges packed into tasks.
- :mod:`~pyspark_dynamic_kafka.source.driver.reader_schemas`: the Avro reader schemas (given
  whole, or a subject's version on the clusters' registries; as the checkpoint recorded).
- :mod:`~pyspark_dynamic_kafka.source.driver.schema_tracking`: ``schemaTrackingLocation``, the
  reader schemas of a stream's first start kept for its next ``load()``.
- :mod:`~pyspark_dynamic_kafka.source.driver.status`: what the stream reports for monitoring and
  its structured reconciliation log lines.
- :mod:`~pyspark_dynamic_kafka.source.driver.modes`: the two seams of what differs between
  streams (partition selection, archive phase).
- :mod:`~pyspark_dynamic_kafka.source.driver.pipeline`: :class:`MicroBatches`, a micro-batch as
  one short pipeline over the modules above.
- :mod:`~pyspark_dynamic_kafka.source.driver.batch_plan`: a batch read's plan, once, over the
  same modules.

Consumer groups (``group/``: ``assignment=group`` and ``commitOffsetsToKafka``):

- :mod:`~pyspark_dynamic_kafka.source.group.admin_offsets`: a group's committed offsets, read and
  written with the admin API.
- :mod:`~pyspark_dynamic_kafka.source.group.committer`: background commits, one in flight per
  cluster.
- :mod:`~pyspark_dynamic_kafka.source.group.query_commits`: ``commitOffsetsToKafka``.
- :mod:`~pyspark_dynamic_kafka.source.group.membership`: a driver-side member of a group on one
  cluster (a rotated SASL password it takes for its next authentication).
- :mod:`~pyspark_dynamic_kafka.source.group.members`: the query's members, one per cluster.
- :mod:`~pyspark_dynamic_kafka.source.group.handoff`: the reader's side of the handoff
  (completed micro-batches the listener reports).
- :mod:`~pyspark_dynamic_kafka.source.group.coordinator`: completed micro-batches as the
  listener reports them, and the stop (SIGTERM).
- :mod:`~pyspark_dynamic_kafka.source.group.ownership`: which partitions the group lets the query
  read, handovers, trimming of replayed micro-batches, commits.
- :mod:`~pyspark_dynamic_kafka.source.group.selection`: the two partition selections
  (``assignment=all``, ``assignment=group``).

Hybrid reads, planned on the driver (``archive/``, ``archive.path``; the executor's side is
``executor/archive``):

- :mod:`~pyspark_dynamic_kafka.source.archive.files`: listing the archive's Parquet files.
- :mod:`~pyspark_dynamic_kafka.source.archive.survey`: what each file holds (from its footer).
- :mod:`~pyspark_dynamic_kafka.source.archive.plan`: the read order, switch offsets and tasks.
- :mod:`~pyspark_dynamic_kafka.source.archive.hybrid`: the archive phase of a stream and of a
  batch read.

Spark's API (thin adapters):

- :mod:`~pyspark_dynamic_kafka.source.stream`, :mod:`~pyspark_dynamic_kafka.source.batch`: the
  stream and batch readers Spark calls; the ``dynamic_kafka`` format's class,
  :class:`DynamicKafkaDataSource`, is :mod:`pyspark_dynamic_kafka.datasource` (above both the
  source and the sink).
- :mod:`~pyspark_dynamic_kafka.source.read_limits`: Spark's read limits (PySpark 4.2's
  admission control), or stand-ins of the same names on PySpark 4.0 and 4.1.
"""
