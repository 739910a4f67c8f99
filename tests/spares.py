"""Local Apache Kafka clusters started ahead of the tests that ask for them.

A local Apache Kafka cluster takes about 3 s to start (a JVM formats its storage, another
starts the broker), and most integration tests start one or two with default settings: started
one after another inside each test, that was a large share of ``make test``'s time, spent
waiting while the CPU idled. :class:`ClusterSpares` keeps a few default clusters started in a
background thread; a test takes them (renamed to the names it asked for: an Apache Kafka
cluster's id does not come from its name) instead of starting its own, and every test still
gets fresh, empty clusters that are stopped after it. A test that asks for anything else
(brokers, racks, TLS, ...) starts its own clusters as before.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence

from pyspark_dynamic_kafka.testing import BaseKafkaCluster, cluster_class
from pyspark_dynamic_kafka.testing.broker_kind import stop_all
from pyspark_dynamic_kafka.testing.errors import check_names

__all__ = ["ClusterSpares"]

_log = logging.getLogger(__name__)


class ClusterSpares:
    """Up to ``count`` started clusters of broker kind ``kind`` (default settings), ready to be
    taken by :meth:`clusters`; a background thread starts new ones as they are taken.

    A spare that fails to start is logged and not offered; a test then starts its clusters
    itself, so spares can make the suite faster, never redder.
    """

    def __init__(self, kind: str, count: int = 2) -> None:
        self._kind = cluster_class(kind)
        self._count = count
        self._ready: list[BaseKafkaCluster] = []
        self._serial = 0
        self._closed = False
        self._wanted = threading.Condition()
        self._thread = threading.Thread(target=self._fill, name="cluster-spares", daemon=True)
        self._thread.start()

    @contextlib.contextmanager
    def clusters(self, names: Sequence[str]) -> Iterator[dict[str, BaseKafkaCluster]]:
        """``{name: cluster}``, all running and empty, stopped on exit: spares where ready,
        the others started here."""
        check_names(names)
        made: dict[str, BaseKafkaCluster] = {}
        try:
            for name in names:
                cluster = self._take()
                if cluster is None:
                    cluster = self._kind(name)
                    made[name] = cluster
                    cluster.start()
                else:
                    cluster.name = name
                    made[name] = cluster
            yield made
        finally:
            stop_all(made.values())

    def close(self) -> None:
        """Stop the background thread and every spare not taken."""
        with self._wanted:
            self._closed = True
            self._wanted.notify_all()
        self._thread.join()
        stop_all(self._ready)
        self._ready.clear()

    def _take(self) -> BaseKafkaCluster | None:
        with self._wanted:
            while self._ready:
                cluster = self._ready.pop(0)
                self._wanted.notify_all()
                if getattr(cluster, "running", True):
                    return cluster
                stop_all([cluster])
        return None

    def _fill(self) -> None:
        while True:
            with self._wanted:
                while not self._closed and len(self._ready) >= self._count:
                    self._wanted.wait()
                if self._closed:
                    return
                self._serial += 1
                name = f"spare-{self._serial}"
            cluster = self._kind(name)
            try:
                cluster.start()
            except Exception:
                _log.exception("could not start a spare cluster; tests start their own")
                stop_all([cluster])
                return
            with self._wanted:
                if self._closed:
                    stop_all([cluster])
                    return
                self._ready.append(cluster)
