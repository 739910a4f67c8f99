"""Every sink option, declared once (key, parser, default, doc), and :class:`SinkOptions`.

Keys are matched case-insensitively (Spark hands them lowercased) with the machinery of
:mod:`pyspark_dynamic_kafka.optionspec`; an unknown key is refused naming the closest valid one.
Names follow Spark's ``kafka`` sink where it has the same option (``topic``, ``kafka.*``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark_dynamic_kafka.avro.options import avro_options
from pyspark_dynamic_kafka.engines.choice import CHOICES
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties, check_client_options
from pyspark_dynamic_kafka.optionspec import (
    METADATA_SERVICE,
    OptionSet,
    OptionSpec,
    boolean,
    choice,
    integer,
    nonempty,
    split_prefixed,
    text,
)
from pyspark_dynamic_kafka.sink.config.avro_format import AvroFormat, avro_format

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE",
    "GUARANTEES",
    "SINK_OPTIONS",
    "SinkOptions",
    "parse_sink_options",
]

KAFKA_PREFIX = "kafka."
METADATA_PREFIX = f"{METADATA_SERVICE}."
#: The default delivery guarantee: what Spark's ``kafka`` sink gives.
AT_LEAST_ONCE = "atLeastOnce"
#: One transaction per task with a progress marker (streams).
EXACTLY_ONCE = "exactlyOnce"
#: The guarantees, in their canonical spelling.
GUARANTEES = (AT_LEAST_ONCE, EXACTLY_ONCE)
#: Options Spark itself hands a sink (not the sink's to check): ``queryName`` comes with a
#: ``writeStream`` given ``.queryName(...)``.
_SPARK_KEYS = frozenset({"checkpointlocation", "path", "queryname"})


def guarantee(value: str) -> str:
    """One of :data:`GUARANTEES`, case-insensitively, in its canonical spelling."""
    by_lower = {g.lower(): g for g in GUARANTEES}
    return by_lower[choice(*by_lower)(value)]


@dataclass(frozen=True)
class SinkOptions:
    """The parsed options of a write to ``format("dynamic_kafka")``.

    Parameters
    ----------
    metadata_service, metadata_options:
        The metadata service kind and its ``metadataService.*`` options.
    stream_id:
        The logical stream written.
    delivery_guarantee:
        ``atLeastOnce`` or ``exactlyOnce``.
    sink_id:
        The ``sinkId`` option (required with ``exactlyOnce``).
    topic:
        The ``topic`` option: every row's topic (wins over a ``topic`` column); ``None`` when
        not given.
    flush_timeout_ms:
        How long a task waits for the cluster to acknowledge its records.
    kafka_properties:
        The ``kafka.*`` producer properties (prefix removed); a cluster's own properties from
        the metadata win over them.
    dedupe_headers:
        Whether every record carries the headers that identify it (sink id, batch, Spark
        partition, sequence), so a reader can drop atLeastOnce's retried copies.
    sink_id_takeover:
        exactlyOnce: this query takes the ``sinkId`` over from the query whose progress markers
        it finds (its micro-batches counted afresh) instead of failing.
    """

    metadata_service: str
    stream_id: str
    delivery_guarantee: str
    sink_id: str | None
    topic: str | None
    flush_timeout_ms: int
    metadata_options: FrozenProperties
    kafka_properties: FrozenProperties
    dedupe_headers: bool = False
    sink_id_takeover: bool = False
    writer: str = "auto"
    value_avro: AvroFormat | None = None
    key_avro: AvroFormat | None = None


_DECLARED: tuple[OptionSpec[Any], ...] = (
    OptionSpec(
        METADATA_SERVICE,
        text,
        None,
        "Where the stream id is resolved: `file` (with metadataService.path), `http` (with "
        "metadataService.url), `singleCluster` (with metadataService.bootstrap.servers), or "
        "`package.module:ClassName` for your own service.",
        required=True,
        attr="metadata_service",
    ),
    OptionSpec(
        "streamId",
        nonempty,
        None,
        "The stream id written; its entry marked `write: true` (or its only cluster) is where "
        "rows go.",
        required=True,
        attr="stream_id",
    ),
    OptionSpec(
        "deliveryGuarantee",
        guarantee,
        AT_LEAST_ONCE,
        "`atLeastOnce`: an idempotent producer, flushed and checked before each task ends (a "
        "retried task writes its rows again; a Python worker keeps it for its next task, as "
        "Spark's sink keeps its own); `exactlyOnce` (writeStream, with "
        "sinkId): one transaction per task with a progress marker, so read_committed readers "
        "see each row of a micro-batch once.",
        attr="delivery_guarantee",
    ),
    OptionSpec(
        "sinkId",
        nonempty,
        None,
        "exactlyOnce: this writer's id, fixed for the life of the query (keep it across "
        "restarts, unique among writers): prefix of its transactional ids and progress groups. "
        "A progress marker written by another streaming query (another checkpoint) fails the "
        "first write, unless sinkIdTakeover is set.",
        attr="sink_id",
    ),
    OptionSpec(
        "sinkIdTakeover",
        boolean,
        "false",
        "exactlyOnce: `true` lets this query take the sinkId over from the query that wrote its "
        "progress markers (a new checkpoint replacing an old one; stop the old query): its "
        "micro-batches are counted afresh rather than skipped up to the old query's markers. "
        "Once this query has written its markers, its own restarts are normal replays.",
        attr="sink_id_takeover",
    ),
    OptionSpec(
        "topic",
        nonempty,
        None,
        "The topic of every row (wins over a `topic` column); must be one of the route's topics.",
        attr="topic",
    ),
    OptionSpec(
        "kafkaProducer.flushTimeoutMs",
        integer(1),
        "120000",
        "How long a task waits for the cluster to acknowledge its records before failing.",
        attr="flush_timeout_ms",
    ),
    OptionSpec(
        "dedupeHeaders",
        boolean,
        "false",
        "`true`: every record carries the headers `dynamic_kafka.sink` (sinkId), "
        "`dynamic_kafka.batch` (micro-batch id; a df.write's own id), `dynamic_kafka.partition` "
        "(Spark partition) and `dynamic_kafka.sequence` (the row's index in it), equal on every "
        "attempt of a deterministic batch, so readers can drop atLeastOnce's retried copies. "
        "Needs sinkId.",
        attr="dedupe_headers",
    ),
    OptionSpec(
        "writer",
        choice(*CHOICES),
        "auto",
        "Who produces the records on the executors: `native` (the compiled core, "
        "pyspark-dynamic-kafka-core: Arrow columns straight to librdkafka; fails at the write's "
        "start when the core is not installed or cannot serve the cluster's client properties), "
        "`python` (confluent-kafka), or `auto`: native where the core is installed and the "
        "cluster's client properties allow it, else python with one log line naming the "
        "cluster and the reason.",
        attr="writer",
    ),
    *avro_options("value", "write"),
    *avro_options("key", "write"),
)

#: The declared sink options, parsed together.
SINK_OPTIONS = OptionSet(
    _DECLARED,
    context="for writes to format dynamic_kafka",
    others=f", and the prefixes '{KAFKA_PREFIX}*' (producer properties) and '{METADATA_PREFIX}*'",
)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Parse and validate the options of ``df.write`` / ``writeStream`` to ``dynamic_kafka``.

    Raises
    ------
    OptionsError
        For an unknown key, a malformed or missing value; the message names the key and value.
    """
    given = {k: v for k, v in options.items() if str(k).lower() not in _SPARK_KEYS}
    declared, kafka, metadata = split_prefixed(given, KAFKA_PREFIX, METADATA_PREFIX)
    for key in kafka:
        if key in ("transactional.id", "bootstrap.servers"):
            raise OptionsError(
                f"Option '{KAFKA_PREFIX}{key}' cannot be set for writes to format dynamic_kafka: "
                "the cluster comes from the metadata's write route and the sink manages "
                "transactions itself. Remove the option."
            )
    check_client_options(kafka, KAFKA_PREFIX)
    parsed = SINK_OPTIONS.parse(declared, "any")
    if parsed["deliveryGuarantee"] == EXACTLY_ONCE and parsed["sinkId"] is None:
        raise OptionsError(
            "Option 'sinkId' is required with deliveryGuarantee=exactlyOnce: name this writer "
            "(e.g. 'orders-writer'), and keep the name when the query restarts."
        )
    if parsed["sinkIdTakeover"] and parsed["deliveryGuarantee"] != EXACTLY_ONCE:
        raise OptionsError(
            "Option 'sinkIdTakeover' is for deliveryGuarantee=exactlyOnce (it decides whose "
            "progress markers count); remove it or set deliveryGuarantee=exactlyOnce."
        )
    if parsed["dedupeHeaders"] and parsed["sinkId"] is None:
        raise OptionsError(
            "Option 'sinkId' is required with dedupeHeaders=true: the header dynamic_kafka.sink "
            "carries it (e.g. 'orders-writer'); keep it when the query restarts."
        )
    return SinkOptions(
        **parsed.fields,
        value_avro=avro_format("value", parsed),
        key_avro=avro_format("key", parsed),
        metadata_options=FrozenProperties(metadata),
        kafka_properties=FrozenProperties(kafka),
    )
