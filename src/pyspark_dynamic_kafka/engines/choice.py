"""Which engine serves a cluster, and why: the one home of that decision, for reading and writing.

Reading, three engines (the option ``reader`` = ``auto`` | ``native`` | ``python``):

- ``direct``: the compiled core (``pyspark-dynamic-kafka-core``) sends Fetch requests itself and
  parses the record batches in place, where its direct fetch path serves the cluster's consumer
  configuration (``pyspark_dynamic_kafka_core.direct_problem`` is ``None``);
- ``librdkafka``: the compiled core reads with librdkafka's consumer (``client.rack``, a
  ``security.protocol`` or property the direct path does not take);
- ``python``: the Python reader (confluent-kafka), with ``reader=python``, or where the core is
  not installed or cannot make a client of the properties (librdkafka vendored without Cyrus
  SASL and libcurl).

Writing, three (the option ``writer``, same values):

- ``direct``: the compiled core writes Produce requests itself (its own idempotent producer:
  record batches written in place from the Arrow columns, no librdkafka; for exactlyOnce its
  own transactions too, with the ``transactional.id`` each task sets), where its direct produce
  path serves the producer configuration
  (``pyspark_dynamic_kafka_core.direct_problem(config, produce=True)`` is ``None``:
  ``write/direct/config.rs``), either guarantee. A property it does not take
  (``compression.type``, a ``partitioner`` other than the sink's ``murmur2_random``, ...) leaves
  the cluster to ``librdkafka``;
- ``librdkafka``: the core's librdkafka producer;
- ``python``: confluent-kafka.

The driver decides once per cluster (:func:`read_engine`, :func:`write_engine`; the answers are
kept per configuration) and its tasks carry the engine's name: executors never decide again.
Each cluster's reading engine is one INFO line per process (the driver's log names the reader and
path of every cluster, and the reason when it is not the fastest); a cluster the core cannot
write to under ``writer=auto`` is one too. ``native`` fails naming the cluster and the reason when
only ``python`` could serve it.
On an executor, a reader planned ``direct`` that handed its ranges to librdkafka (a broker
error, a lost connection) is logged once per cluster and reason (:func:`report_handover`).
Reasons never carry a secret (masked against the cluster's properties).

Both kinds of reason are behind the one call (:func:`read_engine`, :func:`write_engine`): the
Python rules of :func:`core_problem` (SASL GSSAPI and OAUTHBEARER with OIDC, which the core does
not link) and the core's own answers (librdkafka's check of the properties, and the direct fetch
path's, ``read/direct/config.rs``), asked through :mod:`.core`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import redact_secrets
from pyspark_dynamic_kafka.kafka.pool import consumer_config

__all__ = [
    "CHOICES",
    "DIRECT",
    "LIBRDKAFKA",
    "PYTHON",
    "Engine",
    "core_problem",
    "direct_problem",
    "on_core",
    "read_engine",
    "read_engines",
    "report_handover",
    "write_engine",
]

_log = logging.getLogger(__name__)

#: The compiled core's direct fetch path (reading) or direct produce path (writing).
DIRECT = "direct"
#: The compiled core through librdkafka's consumer or producer.
LIBRDKAFKA = "librdkafka"
#: confluent-kafka: the Python reader, or the Python writer.
PYTHON = "python"
#: The values of the options ``reader`` and ``writer``.
CHOICES = ("auto", "native", "python")

#: (what, cluster, reason) already logged in this process (one line each).
_LOGGED: set[tuple[str, str, str]] = set()


@dataclass(frozen=True)
class Engine:
    """The engine that serves one cluster, and why not a faster one.

    Attributes
    ----------
    name
        :data:`DIRECT`, :data:`LIBRDKAFKA` or :data:`PYTHON`.
    reason
        Why the faster engine does not serve the cluster (secrets masked); ``None`` for the
        fastest: ``direct`` when reading, ``librdkafka`` when writing.
    """

    name: str
    reason: str | None = None

    @property
    def compiled(self) -> bool:
        """Whether the compiled core serves the cluster."""
        return on_core(self.name)


@dataclass(frozen=True)
class _Option:
    """How one option (``reader`` or ``writer``) words its outcomes."""

    option: str
    done: str  # "read", "written"
    verb: str  # "read", "write"
    instead: str  # how a cluster the core cannot serve is served instead


_READER = _Option("reader", "read", "read", "with the Python reader")
_WRITER = _Option("writer", "written", "write", "with confluent-kafka")


def _once(key: tuple[str, str, str], level: int, message: str, *args: object) -> None:
    if key not in _LOGGED:
        _LOGGED.add(key)
        _log.log(level, message, *args)


def _core_engine(option: _Option, value: str, cluster_id: str, config: Mapping[str, str]) -> Engine:
    """``python`` with the reason when the compiled core cannot serve the cluster, else
    ``librdkafka``.

    Raises
    ------
    OptionsError
        With ``native``, when the core cannot serve the cluster (naming it and why).
    """
    if value == "python":
        return Engine(PYTHON, f"{option.option}=python")
    problem = core_problem(config)
    if problem is None:
        return Engine(LIBRDKAFKA)
    if value == "native":
        raise OptionsError(
            f"Option {option.option}=native: cluster '{cluster_id}' cannot be {option.done} "
            f"natively: {problem}. Use {option.option}=auto to {option.verb} it "
            f"{option.instead}."
        )
    if option is _WRITER:  # the reader's line is read_engine's, one per cluster
        message = "%s=auto: cluster %r is %s %s: %s"
        args = (option.option, cluster_id, option.done, option.instead, problem)
        _once((option.option, cluster_id, problem), logging.INFO, message, *args)
    return Engine(PYTHON, problem)


def read_engine(reader: str, cluster_id: str, properties: Mapping[str, str]) -> Engine:
    """The engine that reads ``cluster_id``, given the ``reader`` option and the cluster's client
    properties as tasks carry them (the full consumer configuration is built from them).

    Logs one INFO line per cluster (and engine) in this process, naming the reader and its path:
    on the driver, where the decision is made, the driver's log says how each cluster is read.

    Raises
    ------
    OptionsError
        With ``reader=native``, when the compiled core cannot read the cluster.
    """
    config = consumer_config(properties, cluster_id)
    engine = _core_engine(_READER, reader, cluster_id, config)
    if engine.compiled:
        problem = direct_problem(config)
        engine = Engine(DIRECT) if problem is None else Engine(LIBRDKAFKA, problem)
    how = {
        DIRECT: "with the compiled core's direct fetch path (its own Fetch requests)",
        LIBRDKAFKA: "with librdkafka's consumer, not the direct fetch path",
        PYTHON: "with the Python reader",
    }[engine.name]
    why = "" if engine.reason is None or reader == "python" else f": {engine.reason}"
    key = ("read", cluster_id, f"{engine.name} {engine.reason}")
    _once(key, logging.INFO, "reader=%s: cluster %r is read %s%s", reader, cluster_id, how, why)
    return engine


def read_engines(reader: str, properties: Mapping[str, Mapping[str, str]]) -> dict[str, Engine]:
    """:func:`read_engine` of every cluster of ``properties`` (cluster -> its properties)."""
    return {c: read_engine(reader, c, properties[c]) for c in sorted(properties)}


def write_engine(
    writer: str, cluster_id: str, config: Mapping[str, str], exactly_once: bool = False
) -> Engine:
    """The engine that writes to ``cluster_id``, given the ``writer`` option, the producer's
    full configuration and the delivery guarantee (``exactly_once``: the tasks set a
    ``transactional.id``, which the direct produce path serves too): ``direct`` where the direct
    produce path serves the configuration, else ``librdkafka`` (the reason kept), where the
    compiled core can write at all.

    Logs one INFO line per cluster (and engine) in this process, naming the writer and its path.

    Raises
    ------
    OptionsError
        With ``writer=native``, when the compiled core cannot write to the cluster.
    """
    engine = _core_engine(_WRITER, writer, cluster_id, config)
    if engine.compiled:
        if exactly_once and "transactional.id" not in config:
            # the tasks' configuration: each sets its own (<sinkId>.<cluster>.<partition>)
            config = {**config, "transactional.id": f"{cluster_id}.plan"}
        problem = direct_problem(config, True)
        engine = Engine(DIRECT) if problem is None else Engine(LIBRDKAFKA, problem)
        how = {
            DIRECT: "with the compiled core's direct produce path (its own Produce requests)",
            LIBRDKAFKA: "with librdkafka's producer, not the direct produce path",
        }[engine.name]
        why = "" if engine.reason is None else f": {engine.reason}"
        key = ("write", cluster_id, f"{engine.name} {engine.reason}")
        _once(
            key, logging.INFO, "writer=%s: cluster %r is written %s%s", writer, cluster_id, how, why
        )
    return engine


def report_handover(cluster_id: str, reason: str, properties: Mapping[str, str]) -> None:
    """On an executor: the core's reader of ``cluster_id``, planned ``direct``, handed all or part
    of its ranges to librdkafka's consumer because of ``reason``; one warning per cluster and
    reason in this process (``properties``: the cluster's, to mask secrets in the reason)."""
    reason = redact_secrets(reason, properties)
    message = "Cluster %r: the direct fetch path handed reading over to librdkafka's consumer: %s"
    _once(("handover", cluster_id, reason), logging.WARNING, message, cluster_id, reason)


def on_core(engine: str) -> bool:
    """Whether the compiled core serves a cluster planned on ``engine`` (``direct`` or
    ``librdkafka``), not confluent-kafka (``python``)."""
    return engine != PYTHON


def core_problem(config: Mapping[str, str]) -> str | None:
    """Why the compiled core cannot make a client of this full librdkafka configuration, or
    ``None`` (asked of librdkafka once per configuration; the reason has secrets masked)."""
    return _problem(tuple(sorted(config.items())))


def direct_problem(config: Mapping[str, str], produce: bool = False) -> str | None:
    """Why the direct fetch path does not serve a consumer of this full configuration (then
    librdkafka's consumer reads the cluster), or ``None`` (asked once per configuration; secrets
    masked); with ``produce``, why the direct produce path does not serve a producer of it (then
    librdkafka's producer writes). The compiled core must be installed (:func:`core_problem` is
    ``None``)."""
    return _direct(tuple(sorted(config.items())), produce)


# planning asks at every micro-batch, and the answer for the same properties does not change
# within a process: the last 256 answers are kept
@functools.lru_cache(maxsize=256)
def _problem(items: tuple[tuple[str, str], ...]) -> str | None:
    from pyspark_dynamic_kafka.engines import core  # loads the compiled core where installed

    config = dict(items)
    if not core.INSTALLED:
        return core.NOT_INSTALLED
    protocol = config.get("security.protocol", "plaintext").lower()
    mechanism = config.get("sasl.mechanisms", config.get("sasl.mechanism", "GSSAPI")).upper()
    if protocol.startswith("sasl") and mechanism == "GSSAPI":
        return "SASL GSSAPI (Kerberos) needs Cyrus SASL, which the compiled core does not link"
    method = config.get("sasl.oauthbearer.method", "default").lower()
    if protocol.startswith("sasl") and mechanism == "OAUTHBEARER" and method == "oidc":
        return "SASL OAUTHBEARER with OIDC needs libcurl, which the compiled core does not link"
    problem = core.config_problem(items)
    if problem is not None:
        return f"librdkafka refused the client properties: {redact_secrets(problem, config)}"
    return None


@functools.lru_cache(maxsize=256)
def _direct(items: tuple[tuple[str, str], ...], produce: bool) -> str | None:
    from pyspark_dynamic_kafka.engines import core

    if not core.INSTALLED:
        return core.NOT_INSTALLED
    problem = core.direct_problem(items, produce)
    return None if problem is None else redact_secrets(problem, dict(items))
