"""The compiled core (``pyspark-dynamic-kafka-core``), when installed, and whether it can serve
a cluster: librdkafka vendored without Cyrus SASL and libcurl, so some client properties need the
Python clients (confluent-kafka's librdkafka). The source's reader and the sink's writer both
ask here."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from types import ModuleType

from pyspark_dynamic_kafka.kafka.config import redact_secrets

__all__ = ["core", "core_problem"]


def core() -> ModuleType | None:
    """The compiled core's module, or ``None`` when it is not installed."""
    try:
        return importlib.import_module("pyspark_dynamic_kafka_core")
    except ImportError:
        return None


def core_problem(config: Mapping[str, str]) -> str | None:
    """Why the compiled core cannot make a client of this full librdkafka configuration, or
    ``None`` (asked of librdkafka once per configuration; the reason has secrets masked)."""
    return _problem(tuple(sorted(config.items())))


# planning asks at every micro-batch, and the answer for the same properties does not change
# within a process: the last 256 answers are kept
@functools.lru_cache(maxsize=256)
def _problem(items: tuple[tuple[str, str], ...]) -> str | None:
    config = dict(items)
    module = core()
    if module is None:
        return "the compiled core (pyspark-dynamic-kafka-core) is not installed"
    protocol = config.get("security.protocol", "plaintext").lower()
    mechanism = config.get("sasl.mechanisms", config.get("sasl.mechanism", "GSSAPI")).upper()
    if protocol.startswith("sasl") and mechanism == "GSSAPI":
        return "SASL GSSAPI (Kerberos) needs Cyrus SASL, which the compiled core does not link"
    method = config.get("sasl.oauthbearer.method", "default").lower()
    if protocol.startswith("sasl") and mechanism == "OAUTHBEARER" and method == "oidc":
        return "SASL OAUTHBEARER with OIDC needs libcurl, which the compiled core does not link"
    problem = module.config_problem(sorted(config.items()))
    if problem is not None:
        return f"librdkafka refused the client properties: {redact_secrets(problem, config)}"
    return None
