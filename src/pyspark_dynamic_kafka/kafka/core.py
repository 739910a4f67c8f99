"""The compiled core (``pyspark-dynamic-kafka-core``), when installed, and whether it can serve
a cluster: librdkafka vendored without Cyrus SASL and libcurl, so some client properties need the
Python clients (confluent-kafka's librdkafka). The source's reader and the sink's writer both
ask here, and share one policy for their option (``reader``/``writer`` = ``auto`` | ``native`` |
``python``): :func:`core_serves`."""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import redact_secrets

__all__ = ["CoreChoice", "core", "core_problem", "core_serves"]

#: (option, cluster, reason) triples already logged under ``auto`` (one line each per process).
_LOGGED: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class CoreChoice:
    """How one option that chooses the compiled core (``reader`` or ``writer``) words its
    outcomes.

    Attributes
    ----------
    option
        The option's name, e.g. ``"reader"``.
    done
        What the core does to a cluster, as a past participle: ``"read"``, ``"written"``.
    verb
        The same as a verb: ``"read"``, ``"write"``.
    fallback
        How a cluster the core cannot serve is served instead, e.g. ``"with the Python reader"``.
    logger
        Where ``auto``'s one line per cluster and reason goes.
    """

    option: str
    done: str
    verb: str
    fallback: str
    logger: logging.Logger


def core_serves(choice: CoreChoice, value: str, cluster_id: str, config: Mapping[str, str]) -> bool:
    """Whether the compiled core serves ``cluster_id``, whose full librdkafka configuration is
    ``config``, when ``choice``'s option has ``value``: never with ``python``; with ``auto``
    where it can, else ``False`` and one log line per cluster and reason.

    Raises
    ------
    OptionsError
        With ``native``, when the core cannot serve the cluster (naming it and why).
    """
    if value == "python":
        return False
    problem = core_problem(config)
    if problem is None:
        return True
    if value == "native":
        raise OptionsError(
            f"Option {choice.option}=native: cluster '{cluster_id}' cannot be {choice.done} "
            f"natively: {problem}. Use {choice.option}=auto to {choice.verb} it "
            f"{choice.fallback}."
        )
    if (choice.option, cluster_id, problem) not in _LOGGED:
        _LOGGED.add((choice.option, cluster_id, problem))
        choice.logger.info(
            "%s=auto: cluster %r is %s %s: %s",
            choice.option,
            cluster_id,
            choice.done,
            choice.fallback,
            problem,
        )
    return False


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
