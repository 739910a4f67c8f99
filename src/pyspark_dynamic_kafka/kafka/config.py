"""Client configuration: merging per-cluster and query-wide properties (their Java client
properties translated, :mod:`~pyspark_dynamic_kafka.kafka.java_properties`), the properties a
client is built from (secret references resolved, :mod:`~pyspark_dynamic_kafka.kafka.references`),
and masking secrets."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark_dynamic_kafka.errors import (
    ClientPropertyError,
    DynamicKafkaError,
    MetadataValidationError,
    OptionsError,
)
from pyspark_dynamic_kafka.frozen import FrozenMapping
from pyspark_dynamic_kafka.kafka.java_properties import Translation, translate
from pyspark_dynamic_kafka.kafka.references import has_references, reference_problem, resolve
from pyspark_dynamic_kafka.kafka.refusals import option_refusal
from pyspark_dynamic_kafka.registry.endpoint import (
    is_registry_key,
    registry_problems,
    without_registry,
)

__all__ = [
    "DEFAULT_GROUP_ID_PREFIX",
    "FrozenProperties",
    "check_client_options",
    "client_properties",
    "is_secret_key",
    "mask_properties",
    "merge_client_properties",
    "properties_fingerprint",
    "redact",
    "redact_secrets",
    "secrets_key",
]

_log = logging.getLogger(__name__)
#: Translations already logged in this process (one INFO line each).
_LOGGED: set[tuple[str, tuple[str, ...]]] = set()

#: Default of the ``groupIdPrefix`` option, and the ``group.id`` of a consumer given none.
DEFAULT_GROUP_ID_PREFIX = "spark-dynamic-kafka"

_SECRET_MARKERS = (
    "password",
    "secret",
    "token",
    "sasl.jaas.config",
    "ssl.key.pem",
    "credentials",
    "user.info",
)
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
    """Replace the value of every secret property of ``properties`` found in ``text``: as
    written, what its secret references resolve to, and a JAAS configuration's password."""
    written = {str(k): str(v) for k, v in properties.items()}
    secrets = [v for k, v in written.items() if is_secret_key(k)]
    with contextlib.suppress(DynamicKafkaError):  # best effort: what resolves is masked
        resolved = resolve(written) if has_references(written) else written
        for shown in (resolved, translate(resolved).properties):
            secrets.extend(v for k, v in shown.items() if is_secret_key(k))
    return redact(text, secrets)


def secrets_key(properties: Mapping[str, str], cluster_id: str | None = None) -> str:
    """What the secret references of ``properties`` resolve to, as a digest (``""`` without a
    reference): a client built when it was different is replaced (a rotated password file)."""
    return properties_fingerprint(properties, cluster_id) if has_references(properties) else ""


def properties_fingerprint(properties: Mapping[str, str], cluster_id: str | None = None) -> str:
    """A digest of what ``properties`` resolve to: it changes when a secret they refer to does
    (a rotated password), so clients built from the old one are replaced. Without a reference,
    of the properties themselves.

    Raises
    ------
    ClientPropertyError
        When a reference does not resolve.
    """
    resolved = resolve(properties, cluster_id) if has_references(properties) else properties
    digest = hashlib.sha256()
    for key, value in sorted(resolved.items()):
        digest.update(f"{len(key)}:{key}{len(value)}:{value}".encode())
    return digest.hexdigest()


def client_properties(
    properties: Mapping[str, str], cluster_id: str | None = None
) -> dict[str, str]:
    """The properties a librdkafka client is built from: the schema registry's keys left out
    (:mod:`~pyspark_dynamic_kafka.registry.endpoint`), secret references resolved (read now: a
    rotated file is read again), then Java client properties translated.

    Raises
    ------
    ClientPropertyError
        When a reference does not resolve, or a resolved value is a Java client property with no
        librdkafka equivalent (naming the property, never its value).
    """
    properties = without_registry(properties)
    resolved = resolve(properties, cluster_id) if has_references(properties) else properties
    translation = translate(resolved)
    if translation.problems:
        where = f"Cluster '{cluster_id}': client" if cluster_id else "Client"
        key, advice = translation.problems[0]
        raise ClientPropertyError(
            f"{where} property '{key}' is a Java client property with no librdkafka "
            f"equivalent: {advice}."
        )
    return translation.properties


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


def check_client_options(
    properties: Mapping[str, str], prefix: str, cluster_entry: bool = False
) -> None:
    """Refuse client properties given as options (``<prefix><key>``: ``kafka.*``, the
    ``metadataService.*`` of ``singleCluster``) that are Java client properties without a
    librdkafka equivalent, that librdkafka refuses (an unknown property, a value of the wrong
    type, :func:`~pyspark_dynamic_kafka.kafka.refusals.option_refusal`), or whose secret
    reference is malformed. Schema registry keys belong to a cluster's entry: refused unless the
    options are one (``cluster_entry``, as ``singleCluster``'s are), where they are checked
    (:func:`~pyspark_dynamic_kafka.registry.endpoint.registry_problems`) and not given to
    librdkafka.

    Raises
    ------
    OptionsError
        Naming the option and what to write instead, never a value.
    """
    for key, advice in translate(properties).problems:
        raise OptionsError(
            f"Option '{prefix}{key}' is a Java client property with no librdkafka equivalent: "
            f"{advice}."
        )
    if cluster_entry:
        for key, message in registry_problems(properties):
            raise OptionsError(f"Option '{prefix}{key}': {message}.")
    else:
        for key in filter(is_registry_key, properties):
            raise OptionsError(
                f"Option '{prefix}{key}': a schema registry is part of its cluster's entry in "
                f"the metadata, not a client property; write '{key}' there, beside the "
                "cluster's bootstrap.servers."
            )
    for key, value in properties.items():
        problem = reference_problem(value)
        if problem is not None:
            raise OptionsError(f"Option '{prefix}{key}': the secret reference {problem}.")
    refusal = option_refusal(without_registry(properties))
    if refusal is not None:
        key, detail = refusal
        raise OptionsError(
            f"Option '{prefix}{key}': librdkafka refuses it ({redact_secrets(detail, properties)})."
            " Fix the option or remove it."
        )


def merge_client_properties(
    query_wide: Mapping[str, str], cluster: Mapping[str, str], cluster_id: str = "?"
) -> FrozenProperties:
    """Merge query-wide ``kafka.*`` properties with a cluster's own, each with its Java client
    properties translated; the cluster's win. What was translated is logged once per process
    at INFO (keys only, never a value).

    Parameters
    ----------
    query_wide:
        Properties from the query's ``kafka.*`` options, prefix removed.
    cluster:
        Properties of one cluster from the metadata service.
    cluster_id:
        The cluster's id, for messages.

    Raises
    ------
    OptionsError
        When a ``kafka.*`` option is a Java client property with no librdkafka equivalent.
    MetadataValidationError
        When one of the cluster's properties is.
    """
    options, own = translate(query_wide), translate(cluster)
    for translation, error, origin in (
        (options, OptionsError, "Option 'kafka."),
        (
            own,
            MetadataValidationError,
            f"Cluster '{cluster_id}' of the metadata: client property '",
        ),
    ):
        if translation.problems:
            key, advice = translation.problems[0]
            raise error(
                f"{origin}{key}' is a Java client property with no librdkafka equivalent: {advice}."
            )
    _log_translated(cluster_id, options, own)
    merged: dict[str, str] = dict(options.properties)
    merged.update(own.properties)
    return FrozenProperties(merged)


def _log_translated(cluster_id: str, options: Translation, own: Translation) -> None:
    said = [
        f"{origin}: {'; '.join(t.translated)}"
        for origin, t in (("kafka.* options", options), ("the metadata", own))
        if t.translated
    ]
    key = (cluster_id, tuple(said))
    if said and key not in _LOGGED:
        _LOGGED.add(key)
        _log.info(
            "Cluster %r: Java client properties translated for librdkafka (%s)",
            cluster_id,
            "; ".join(said),
        )
