"""Client configuration: merging per-cluster and query-wide properties, and masking secrets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark_dynamic_kafka.frozen import FrozenMapping

__all__ = [
    "DEFAULT_GROUP_ID_PREFIX",
    "FrozenProperties",
    "is_secret_key",
    "mask_properties",
    "merge_client_properties",
    "redact",
    "redact_secrets",
]

#: Default of the ``groupIdPrefix`` option, and the ``group.id`` of a consumer given none.
DEFAULT_GROUP_ID_PREFIX = "spark-dynamic-kafka"

_SECRET_MARKERS = ("password", "secret", "token", "sasl.jaas.config", "ssl.key.pem", "credentials")
_MASK = "******"
_MIN_REDACTED_LENGTH = 3


def is_secret_key(key: str) -> bool:
    """Return whether a client property holds a secret that must never be logged or stored.

    Parameters
    ----------
    key:
        A librdkafka property name such as ``sasl.password``.
    """
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


def mask_properties(properties: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``properties`` whose secret values are replaced by a mask."""
    return {k: (_MASK if is_secret_key(k) else v) for k, v in properties.items()}


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each secret value in ``text`` with a mask.

    For messages built from client or parser errors, which could quote a secret. Values shorter
    than three characters are left alone (masking them would mangle the text, not protect it).
    """
    for secret in sorted(set(secrets), key=len, reverse=True):
        if len(secret) >= _MIN_REDACTED_LENGTH:
            text = text.replace(secret, _MASK)
    return text


def redact_secrets(text: str, properties: Mapping[str, Any]) -> str:
    """Replace the value of every secret property of ``properties`` found in ``text``."""
    return redact(text, (str(v) for k, v in properties.items() if is_secret_key(k)))


class FrozenProperties(FrozenMapping[str]):
    """An immutable, hashable, picklable string mapping whose ``repr`` masks secrets.

    Parameters
    ----------
    items:
        The properties; keys and values are converted to ``str``.
    """

    __slots__ = ()

    def __init__(self, items: Mapping[str, object] | None = None) -> None:
        super().__init__({str(k): str(v) for k, v in (items or {}).items()})

    def __repr__(self) -> str:
        return f"FrozenProperties({mask_properties(self._items)!r})"


def merge_client_properties(
    query_wide: Mapping[str, str], cluster: Mapping[str, str]
) -> FrozenProperties:
    """Merge query-wide ``kafka.*`` properties with a cluster's own; the cluster's win.

    Parameters
    ----------
    query_wide:
        Properties from the query's ``kafka.*`` options, prefix removed.
    cluster:
        Properties of one cluster from the metadata service.
    """
    merged: dict[str, str] = dict(query_wide)
    merged.update(cluster)
    return FrozenProperties(merged)
