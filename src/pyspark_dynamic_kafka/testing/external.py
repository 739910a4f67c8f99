"""Clusters that run already, named by ``DYNAMIC_KAFKA_TEST_BROKERS``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence

import pyspark_dynamic_kafka.testing.errors as errors
from pyspark_dynamic_kafka.testing.broker_kind import BaseKafkaCluster
from pyspark_dynamic_kafka.testing.errors import ENV_VAR, BrokersEnvError, ConfigValue
from pyspark_dynamic_kafka.testing.producing import ONE_PER_BATCH

__all__ = ["ExternalKafkaCluster", "clusters_from_env", "parse_brokers_env"]

_log = logging.getLogger(__name__)


class ExternalKafkaCluster(BaseKafkaCluster):
    """A cluster that runs already; :meth:`start` does nothing.

    Topics are not isolated between tests on a shared cluster, so :meth:`stop` deletes the
    topics created through this object (pass ``delete_created_topics=False`` to keep them). It
    never touches the broker otherwise.

    :meth:`produce` sends one record per batch, as to Tansu, since the broker may be any
    Kafka-protocol broker.

    Parameters
    ----------
    name:
        The cluster's name.
    bootstrap_servers:
        ``host:port`` (or a comma-separated list; :attr:`port` is the first one's port).
    client_config:
        Extra librdkafka properties for the helpers' clients (security settings, ...).
    delete_created_topics:
        Whether :meth:`stop` deletes the topics that :meth:`create_topic` created.
    """

    produce_defaults = ONE_PER_BATCH

    def __init__(
        self,
        name: str,
        bootstrap_servers: str,
        *,
        client_config: Mapping[str, ConfigValue] | None = None,
        delete_created_topics: bool = True,
    ) -> None:
        super().__init__(name, client_config)
        first = bootstrap_servers.split(",")[0].strip()
        host, sep, port = first.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(
                f"cluster {name!r}: bootstrap servers {bootstrap_servers!r} are not host:port"
            )
        self._bootstrap_servers = bootstrap_servers
        self._port = int(port)
        self.delete_created_topics = delete_created_topics
        self._created: list[str] = []

    @property
    def bootstrap_servers(self) -> str:
        """The bootstrap servers given at construction."""
        return self._bootstrap_servers

    @property
    def port(self) -> int:
        """The port of the first bootstrap server."""
        return self._port

    def start(self) -> ExternalKafkaCluster:
        """Do nothing: the cluster runs already. Returns ``self``."""
        return self

    def stop(self) -> None:
        """Delete the topics this object created (unless disabled); idempotent."""
        created, self._created = self._created, []
        if not self.delete_created_topics:
            return
        for topic in created:
            try:
                self.delete_topic(topic)
            except errors.KafkaTestingError as exc:
                _log.warning("cluster %s: could not delete topic %s: %s", self.name, topic, exc)

    def _created_topic(self, name: str) -> None:
        self._created.append(name)


def parse_brokers_env(value: str) -> dict[str, str]:
    """Parse ``east=host:port,west=host:port`` into ``{name: bootstrap servers}``.

    Raises
    ------
    BrokersEnvError
        If an entry is not ``name=host:port`` or a name repeats.
    """
    result: dict[str, str] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        name, sep, servers = (s.strip() for s in entry.partition("="))
        host, colon, port = servers.rpartition(":")
        if not sep or not name or not colon or not host or not port.isdigit():
            raise BrokersEnvError(
                f"{ENV_VAR}: entry {entry!r} is not name=host:port "
                "(expected e.g. east=127.0.0.1:9092,west=127.0.0.1:9093)"
            )
        if name in result:
            raise BrokersEnvError(f"{ENV_VAR}: cluster {name!r} appears twice")
        result[name] = servers
    return result


def clusters_from_env(
    names: Sequence[str], environ: Mapping[str, str] | None = None
) -> dict[str, ExternalKafkaCluster] | None:
    """Clusters named by ``DYNAMIC_KAFKA_TEST_BROKERS``, or ``None`` if it is unset or empty.

    A requested name that the variable defines gets that broker; the other requested names get
    the remaining brokers in the variable's order.

    Parameters
    ----------
    names:
        Distinct cluster names the caller needs.
    environ:
        Where to look up the variable; ``os.environ`` by default.

    Returns
    -------
    dict or None
        ``{name: ExternalKafkaCluster}`` in the order of ``names``.

    Raises
    ------
    BrokersEnvError
        If the variable is malformed or names fewer clusters than requested.
    """
    errors.check_names(names)
    value = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not value:
        return None
    available = parse_brokers_env(value)
    if len(available) < len(names):
        raise BrokersEnvError(
            f"{ENV_VAR} names {len(available)} cluster(s) ({', '.join(available) or 'none'}) "
            f"but {len(names)} are needed ({', '.join(names)}); add brokers to it or unset it "
            "to start local Tansu clusters"
        )
    spare = [n for n in available if n not in names]
    result: dict[str, ExternalKafkaCluster] = {}
    for name in names:
        servers = available[name] if name in available else available[spare.pop(0)]
        result[name] = ExternalKafkaCluster(name, servers)
    return result
