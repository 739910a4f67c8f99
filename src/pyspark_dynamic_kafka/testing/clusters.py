"""Several clusters at once: local Tansu clusters, or the brokers the environment names."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark_dynamic_kafka.testing.base import BaseKafkaCluster, stop_all
from pyspark_dynamic_kafka.testing.common import check_names
from pyspark_dynamic_kafka.testing.external import clusters_from_env
from pyspark_dynamic_kafka.testing.local import LocalKafkaCluster

__all__ = ["open_clusters", "start_clusters"]


@contextlib.contextmanager
def start_clusters(names: Sequence[str], **options: Any) -> Iterator[dict[str, LocalKafkaCluster]]:
    """Start one local cluster per name; stop them all on exit, even after an error.

    Parameters
    ----------
    names:
        Distinct cluster names.
    **options:
        Keyword arguments for every :class:`LocalKafkaCluster` (``startup_timeout``, ...).

    Yields
    ------
    dict
        ``{name: LocalKafkaCluster}``, all running, in the order of ``names``.
    """
    check_names(names)
    clusters: dict[str, LocalKafkaCluster] = {}
    try:
        for name in names:
            cluster = LocalKafkaCluster(name, **options)
            clusters[name] = cluster
            cluster.start()
        yield clusters
    finally:
        stop_all(clusters.values())


@contextlib.contextmanager
def open_clusters(names: Sequence[str], **options: Any) -> Iterator[dict[str, BaseKafkaCluster]]:
    """Clusters from ``DYNAMIC_KAFKA_TEST_BROKERS`` if set, else local Tansu clusters.

    Parameters
    ----------
    names:
        Distinct cluster names.
    **options:
        Keyword arguments for :class:`LocalKafkaCluster` (ignored for external clusters).

    Yields
    ------
    dict
        ``{name: cluster}``; all are stopped (external ones: their topics deleted) on exit.
    """
    external = clusters_from_env(names)
    if external is None:
        with start_clusters(names, **options) as local:
            yield dict(local)
        return
    try:
        yield dict(external)
    finally:
        stop_all(external.values())
