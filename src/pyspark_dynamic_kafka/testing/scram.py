"""SCRAM users of an Apache Kafka test cluster started with ``scram=True`` (each with
SCRAM-SHA-256 and SCRAM-SHA-512 credentials; the SASL_SSL listener of ``tls=True`` takes both).

Users are created, and their passwords changed, at runtime with AlterUserScramCredentials sent
over the cluster's PLAINTEXT listener (the test clusters have no authorizer); clients then
authenticate on its SASL_PLAINTEXT listener (:attr:`ApacheKafkaCluster.sasl_bootstrap_servers`).
A password changed on the broker is refused for every new connection at once, while connections
that authenticated earlier stay open: what a credential rotation looks like to a running client.

Examples
--------
>>> with start_clusters(["east"], broker="kafka", scram=True) as clusters:  # doctest: +SKIP
...     east = clusters["east"]
...     set_scram_password(east, "reader", "first")
...     properties = scram_client_properties(east, "reader", "first")
...     set_scram_password(east, "reader", "second")  # "first" is refused from now on
...     scram_refusal(east, "reader", "first")
"""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster
from pyspark_dynamic_kafka.testing.errors import KafkaTestingError, seconds_left, wait_for
from pyspark_dynamic_kafka.testing.kafka_config import SCRAM_MECHANISM

__all__ = ["scram_client_properties", "scram_refusal", "set_scram_password"]

_ITERATIONS = 4096


def scram_client_properties(
    cluster: ApacheKafkaCluster, user: str, password: str
) -> dict[str, str]:
    """librdkafka properties of a client that authenticates as ``user`` on the SASL listener."""
    return {
        "bootstrap.servers": cluster.sasl_bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": SCRAM_MECHANISM,
        "sasl.username": user,
        "sasl.password": password,
    }


def set_scram_password(
    cluster: ApacheKafkaCluster, user: str, password: str, timeout: float = 60.0
) -> None:
    """Create ``user`` or change its password, then wait until the SASL listener accepts it.

    Raises
    ------
    KafkaTestingError
        If the cluster refuses the change or the new password is not accepted in time.
    """
    deadline = time.monotonic() + timeout
    upserts = [
        UserScramCredentialUpsertion(
            user, ScramCredentialInfo(mechanism, _ITERATIONS), password.encode()
        )
        for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)
    ]
    admin = AdminClient(cluster.client_properties())
    try:
        for upsert in upserts:  # a request may alter a user's credentials once
            for future in admin.alter_user_scram_credentials([upsert]).values():
                future.result(timeout=seconds_left(deadline))
    except KafkaException as exc:
        raise KafkaTestingError(
            f"cluster {cluster.name!r} refused SCRAM credentials for {user!r}: {exc}"
        ) from None
    finally:
        del admin
    properties = scram_client_properties(cluster, user, password)
    wait_for(
        lambda: _authenticates(properties, seconds_left(deadline)),
        deadline,
        f"cluster {cluster.name!r} to accept the new password of {user!r}",
    )


def scram_refusal(
    cluster: ApacheKafkaCluster, user: str, password: str, timeout: float = 60.0
) -> str:
    """The error the SASL listener answers a new connection as ``user`` with ``password``.

    Raises
    ------
    KafkaTestingError
        If the password is accepted, or no authentication error comes within ``timeout``.
    """
    errors: list[KafkaError] = []
    config: dict[str, Any] = {
        **scram_client_properties(cluster, user, password),
        "error_cb": errors.append,
    }
    deadline = time.monotonic() + timeout
    admin = AdminClient(config)
    try:
        while time.monotonic() < deadline:
            try:
                admin.list_topics(timeout=min(seconds_left(deadline), 2.0))
            except KafkaException as exc:
                errors.extend(exc.args[:1])
            else:
                raise KafkaTestingError(f"cluster {cluster.name!r} accepted {user!r}'s password")
            admin.poll(0.1)  # serves error_cb
            refused = [e for e in errors if e.code() == KafkaError._AUTHENTICATION]
            if refused:
                return str(refused[0].str())
    finally:
        del admin
    raise KafkaTestingError(
        f"cluster {cluster.name!r} answered no authentication error for {user!r} within "
        f"{timeout:g}s (errors: {[e.str() for e in errors]})"
    )


def _authenticates(properties: dict[str, str], timeout: float) -> bool:
    admin = AdminClient(dict(properties))
    try:
        admin.list_topics(timeout=min(timeout, 5.0))
        return True
    finally:
        del admin
