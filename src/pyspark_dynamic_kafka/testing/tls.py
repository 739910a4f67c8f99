"""Clients of the TLS listeners of an Apache Kafka test cluster started with ``tls=True``.

Every broker then also has an ``SSL`` client listener (TLS, no SASL) and a ``SASL_SSL`` one (TLS
with SASL PLAIN, whose one user is :data:`~.kafka_config.PLAIN_USER`, and SCRAM-SHA-256, whose
users :mod:`~.scram` manages), with the certificate of :mod:`~.certificates`.

>>> with start_clusters(["east"], broker="kafka", tls=True) as clusters:  # doctest: +SKIP
...     east = clusters["east"]
...     Consumer({**tls_client_properties(east), "group.id": "g"})
...     Consumer({**plain_client_properties(east), "group.id": "g"})
"""

from __future__ import annotations

from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.certificates import TlsStore
from pyspark_dynamic_kafka.testing.errors import KafkaTestingError
from pyspark_dynamic_kafka.testing.kafka_config import PLAIN_PASSWORD, PLAIN_USER

__all__ = [
    "plain_client_properties",
    "sasl_ssl_scram_client_properties",
    "tls_client_properties",
]


def _store(cluster: ApacheKafkaCluster) -> TlsStore:
    if cluster.tls_store is None:
        raise KafkaTestingError(f"cluster {cluster.name!r} was started without tls=True")
    return cluster.tls_store


def tls_client_properties(cluster: ApacheKafkaCluster) -> dict[str, str]:
    """librdkafka properties of a client of the ``SSL`` listener (the broker's certificate and
    host name verified)."""
    return {
        "bootstrap.servers": cluster.listener_servers("SSL"),
        "security.protocol": "SSL",
        "ssl.ca.location": str(_store(cluster).ca_location),
    }


def plain_client_properties(
    cluster: ApacheKafkaCluster, user: str = PLAIN_USER, password: str = PLAIN_PASSWORD
) -> dict[str, str]:
    """librdkafka properties of a client of the ``SASL_SSL`` listener with SASL PLAIN."""
    return {
        "bootstrap.servers": cluster.listener_servers("SASL_SSL"),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(_store(cluster).ca_location),
        "sasl.mechanism": "PLAIN",
        "sasl.username": user,
        "sasl.password": password,
    }


def sasl_ssl_scram_client_properties(
    cluster: ApacheKafkaCluster, user: str, password: str, mechanism: str
) -> dict[str, str]:
    """librdkafka properties of a client of the ``SASL_SSL`` listener with SCRAM (users:
    :func:`~.scram.set_scram_password`)."""
    return {**plain_client_properties(cluster, user, password), "sasl.mechanism": mechanism}
