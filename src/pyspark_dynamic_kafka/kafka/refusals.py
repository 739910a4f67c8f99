"""Client properties librdkafka refuses when a client is created (an unknown property, a value
of the wrong type, a SASL mechanism it lacks, a certificate file it cannot read), named with
where they came from: a query's option (``kafka.*``, the ``metadataService.*`` of
``singleCluster``) or a cluster of the metadata.

A query's client options are checked when it is defined (:func:`option_refusal`), on a
configuration of their own that connects nowhere; a cluster's merged properties when its first
client is created, and a refusal names its source (:func:`property_source`), never a value.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException

from pyspark_dynamic_kafka.kafka.client_errors import kafka_error
from pyspark_dynamic_kafka.kafka.java_properties import translate
from pyspark_dynamic_kafka.kafka.references import has_references

__all__ = ["librdkafka_detail", "option_refusal", "property_source", "refused_property"]

#: How librdkafka names the property it refuses when a client is created.
_REFUSED = re.compile(
    r'configuration property:? "([^"]+)"|(Unsupported SASL mechanism)'
    r"|\b((?:ssl|sasl)(?:\.[a-z]+)+)(?: failed:|:)"  # a file it cannot read: ssl.*.location
)
#: How librdkafka starts a refusal of its own checks.
_CREATING = re.compile(r"^Failed to create (?:admin client|consumer|producer): ")
#: librdkafka's aliases: a refusal of one may be of the other as written.
_ALIASES = {"sasl.mechanism": "sasl.mechanisms", "sasl.mechanisms": "sasl.mechanism"}
#: librdkafka's own log lines of a configuration check (warnings about a client type's
#: properties, no bootstrap.servers): not the user's business.
_QUIET = logging.getLogger(__name__ + ".check")
_QUIET.disabled = True


def librdkafka_detail(exc: BaseException) -> str:
    """librdkafka's reason in ``exc``, without the ``KafkaError{...}`` wrapping nor its
    ``Failed to create ...:`` prefix."""
    error = kafka_error(exc)
    detail = str(exc) if error is None else error.str()
    return _CREATING.sub("", detail)  # what failed is said around it


def refused_property(message: str) -> str | None:
    """The client property a librdkafka refusal names (``sasl.mechanism`` for an unsupported
    mechanism), or ``None``."""
    match = _REFUSED.search(message)
    if match is None:
        return None
    return match.group(1) or match.group(3) or "sasl.mechanism"


def option_refusal(properties: Mapping[str, str]) -> tuple[str, str] | None:
    """``(key as written, librdkafka's reason)`` when librdkafka refuses one of a query's client
    options on their own (their Java client properties translated, values with a secret
    reference left to when they are resolved), else ``None``.

    Checked: each property's name and value, the ``security.protocol`` and the SASL mechanism
    (one librdkafka has). Not checked here: what depends on the cluster's own properties (a
    key store opened with its password, the credentials a mechanism needs), which the cluster's
    first client meets (:func:`property_source` names it then). Nothing connects, reads a file
    or runs a command: no TLS or SASL is set up but the mechanism's, with placeholder
    credentials.
    """
    translation = translate(properties)
    given = {
        k: v
        for k, v in translation.properties.items()
        if k != "bootstrap.servers" and not has_references({k: v})
    }
    protocol = given.pop("security.protocol", None)
    credentials = {"sasl.username": "u", "sasl.password": "p"}
    checks: list[tuple[str | None, dict[str, str]]] = [(None, given)]
    if protocol is not None:
        sasl = {**credentials, "sasl.mechanism": "PLAIN"}
        checks.append(("security.protocol", {"security.protocol": protocol, **sasl}))
    for name in _ALIASES:
        if name in given:
            sasl = {**credentials, "security.protocol": "SASL_PLAINTEXT", name: given[name]}
            checks.append((name, sasl))
    for named, config in checks:
        detail = _refusal(config)
        key = named or (refused_property(detail) if detail is not None else None)
        if detail is not None and key is not None:
            return _as_written(key, properties, translation.translated), detail
    return None


def _refusal(config: Mapping[str, str]) -> str | None:
    """librdkafka's reason when it refuses to create a consumer of ``config``, else ``None``."""
    try:
        Consumer({"group.id": "dynamic-kafka-check", **config, "logger": _QUIET}).close()
    except KafkaException as exc:
        return librdkafka_detail(exc)
    return None


def _as_written(key: str, properties: Mapping[str, str], translated: tuple[str, ...]) -> str:
    """The option's key as the user wrote it: the Java key it was translated from, or the
    librdkafka key (or its alias) in the case written."""
    for said in translated:
        java, _, rdkafka = said.partition(" -> ")
        if key in rdkafka:
            return java.split(" ")[0].split("=")[0]
    written = {k.lower(): k for k in properties}
    for name in (key, _ALIASES.get(key, key)):
        if name in written:
            return written[name]
    return key


def property_source(
    key: str,
    properties: Mapping[str, str],
    query_wide: Mapping[str, str],
    cluster_id: str,
    prefix: str = "kafka.",
) -> str:
    """Where client property ``key`` of a cluster's merged ``properties`` came from, for
    messages: ``option 'kafka.<key>'`` when the query's ``query_wide`` options set it (options
    named with ``prefix``), else ``client property '<key>' of cluster '<id>' in the metadata``."""
    options = translate(query_wide).properties
    for name in dict.fromkeys((key, _ALIASES.get(key, key))):
        if name in options and properties.get(name) == options[name]:
            return f"option '{prefix}{name}'"
    return f"client property '{key}' of cluster '{cluster_id}' in the metadata"
