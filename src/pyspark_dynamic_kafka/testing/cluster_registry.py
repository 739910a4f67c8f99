"""Several clusters at once, of a broker kind named by a string, or the brokers the environment
names.

A broker kind is one :class:`BaseKafkaCluster` subclass registered in :data:`BROKER_KINDS`; its
constructor takes the cluster's name first and the kind's own keyword options after it. Apache
Kafka (``kafka``) is started when no kind is named; the embedded Tansu broker (``tansu``) needs
no Java but is not Kafka where a test may look (see :class:`LocalKafkaCluster`): above all, a
partition's high watermark covers only the first record of the last batch written, so records a
producer batched (``linger.ms``) stay invisible to readers.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal, overload

from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.broker_kind import BaseKafkaCluster, stop_all
from pyspark_dynamic_kafka.testing.errors import BROKER_ENV_VAR, check_names
from pyspark_dynamic_kafka.testing.external import clusters_from_env
from pyspark_dynamic_kafka.testing.local import LocalKafkaCluster

__all__ = ["BROKER_KINDS", "DEFAULT_BROKER", "cluster_class", "open_clusters", "start_clusters"]

BROKER_KINDS: dict[str, type[BaseKafkaCluster]] = {
    "tansu": LocalKafkaCluster,
    "kafka": ApacheKafkaCluster,
}
"""The kinds of local cluster :func:`start_clusters` can start, by name."""

DEFAULT_BROKER = "kafka"
"""The kind started when none is named: real Apache Kafka (needs Java 17+; the jars are fetched
from Maven Central on first use). ``tansu`` must be named."""


def cluster_class(broker: str) -> type[BaseKafkaCluster]:
    """The cluster class of a broker kind.

    Raises
    ------
    ValueError
        If the kind is not in :data:`BROKER_KINDS`.
    """
    try:
        return BROKER_KINDS[broker]
    except KeyError:
        known = ", ".join(sorted(BROKER_KINDS))
        raise ValueError(f"unknown broker kind {broker!r}; known kinds: {known}") from None


@overload
def start_clusters(
    names: Sequence[str],
    broker: Literal["kafka"] = ...,
    brokers_per_cluster: int = ...,
    racks: Sequence[str] | None = ...,
    **options: Any,
) -> contextlib.AbstractContextManager[dict[str, ApacheKafkaCluster]]: ...


@overload
def start_clusters(
    names: Sequence[str],
    broker: Literal["tansu"],
    brokers_per_cluster: int = ...,
    racks: Sequence[str] | None = ...,
    **options: Any,
) -> contextlib.AbstractContextManager[dict[str, LocalKafkaCluster]]: ...


@overload
def start_clusters(
    names: Sequence[str],
    broker: str,
    brokers_per_cluster: int = ...,
    racks: Sequence[str] | None = ...,
    **options: Any,
) -> contextlib.AbstractContextManager[dict[str, BaseKafkaCluster]]: ...


def start_clusters(
    names: Sequence[str],
    broker: str = DEFAULT_BROKER,
    brokers_per_cluster: int = 1,
    racks: Sequence[str] | None = None,
    **options: Any,
) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """Start one local cluster per name; stop them all on exit, even after an error.

    Parameters
    ----------
    names:
        Distinct cluster names.
    broker:
        The broker kind, a key of :data:`BROKER_KINDS`: ``kafka`` (the default;
        :class:`ApacheKafkaCluster`, real Apache Kafka KRaft nodes, needs Java 17+ and, on
        first use, network access to Maven Central for the jars) or ``tansu``
        (:class:`LocalKafkaCluster`, one in-memory Tansu process per cluster, needs nothing
        beyond the ``testing`` extra, but its high watermark hides the records of a
        multi-record batch until a later batch lands, its ``read_committed`` reads return
        aborted records, and it has no retention, DeleteRecords, CreatePartitions or
        LogAppendTime: a user's own producer, transactions or retention are tested on
        ``kafka``).
    brokers_per_cluster:
        Brokers of every cluster; topics can have up to this many replicas. Only kinds that
        run several brokers (``kafka``) accept more than 1.
    racks:
        ``broker.rack`` of each broker of a cluster (``["dc1", "dc2", "dc2"]``, one per broker);
        consumers with a ``client.rack`` then fetch from a replica in their rack. ``kafka`` only.
    **options:
        Keyword arguments for every cluster of that kind (``startup_timeout``, ``log_dir``,
        ...).

    Yields
    ------
    dict
        ``{name: cluster}``, all running, in the order of ``names``.

    Raises
    ------
    ValueError
        If the kind is unknown, or cannot run ``brokers_per_cluster`` brokers or ``racks``.
    """
    kind = cluster_class(broker)
    if kind.multi_broker:
        options = {"brokers": brokers_per_cluster, "racks": racks, **options}
    elif brokers_per_cluster != 1 or racks is not None:
        capable = ", ".join(repr(k) for k, c in sorted(BROKER_KINDS.items()) if c.multi_broker)
        given = f"brokers_per_cluster={brokers_per_cluster}" if racks is None else f"racks={racks}"
        raise ValueError(
            f"broker kind {broker!r} runs one broker per cluster without racks, so {given} "
            f"cannot be honoured; use broker={capable or 'a multi-broker kind'} "
            "(or leave brokers_per_cluster=1 and racks=None)"
        )
    return _started(names, kind, options)


@contextlib.contextmanager
def _started(
    names: Sequence[str], kind: type[BaseKafkaCluster], options: Mapping[str, Any]
) -> Iterator[dict[str, Any]]:
    check_names(names)
    clusters: dict[str, BaseKafkaCluster] = {}
    try:
        for name in names:
            cluster = kind(name, **options)
            clusters[name] = cluster
            cluster.start()
        yield clusters
    finally:
        stop_all(clusters.values())


@contextlib.contextmanager
def open_clusters(
    names: Sequence[str],
    broker: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    **options: Any,
) -> Iterator[dict[str, BaseKafkaCluster]]:
    """Clusters from ``DYNAMIC_KAFKA_TEST_BROKERS`` if set, else freshly started local ones.

    Parameters
    ----------
    names:
        Distinct cluster names.
    broker:
        The kind of local cluster; ``None`` reads ``DYNAMIC_KAFKA_TEST_BROKER`` (default
        ``kafka``, real Apache Kafka; ``tansu`` for the embedded broker, with the limits
        :func:`start_clusters` names).
    environ:
        Where to look up both variables; ``os.environ`` by default.
    **options:
        Keyword arguments of :func:`start_clusters` for the local clusters
        (``brokers_per_cluster``, ``racks``, ...); ignored for external clusters.

    Yields
    ------
    dict
        ``{name: cluster}``; all are stopped (external ones: their topics deleted) on exit.
    """
    environ = os.environ if environ is None else environ
    external = clusters_from_env(names, environ)
    if external is not None:
        try:
            yield dict(external)
        finally:
            stop_all(external.values())
        return
    kind = broker or environ.get(BROKER_ENV_VAR, "").strip() or DEFAULT_BROKER
    with start_clusters(names, kind, **options) as local:
        yield dict(local)
