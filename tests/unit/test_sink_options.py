"""The sink's options and the columns it accepts, checked on the driver before any task runs."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructType,
)

from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.metadata.memory import InMemoryMetadataService
from pyspark_dynamic_kafka.metadata.model import ClusterMetadata, KafkaStream
from pyspark_dynamic_kafka.sink.config.options import parse_sink_options
from pyspark_dynamic_kafka.sink.driver.plan import plan_write
from pyspark_dynamic_kafka.sink.executor.produce import STAMP_HEADERS, Stamp
from pyspark_dynamic_kafka.sink.executor.task import WriteTask
from pyspark_dynamic_kafka.sink.route import WriteRoute
from pyspark_dynamic_kafka.sink.writer import check_columns

BASE = {"metadataService": "file", "metadataService.path": "/m.yaml", "streamId": "orders"}


def test_options_parse_with_defaults_and_any_case() -> None:
    lowered = {key.lower(): value for key, value in BASE.items()}
    extra = {"deliveryguarantee": "ATLEASTONCE", "kafka.linger.ms": "20"}
    # Spark hands the checkpoint location and .queryName(...) to the sink as options
    given = {"checkpointLocation": "/chk", "queryName": "orders-writer"}
    options = parse_sink_options({**lowered, **extra, **given})
    assert options.stream_id == "orders"
    assert options.delivery_guarantee == "atLeastOnce"
    assert options.topic is None
    assert options.flush_timeout_ms == 120_000
    assert dict(options.kafka_properties) == {"linger.ms": "20"}
    assert dict(options.metadata_options) == {"path": "/m.yaml"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"streamId": " "}, "Option 'streamId' is required for writes to format dynamic_kafka"),
        ({"streamIds": "orders"}, "Unknown option 'streamIds' for writes to format dynamic_kafka"),
        ({"deliveryGuarantee": "never"}, "Invalid value 'never' for option 'deliveryGuarantee'"),
        ({"kafkaProducer.flushTimeoutMs": "0"}, "option 'kafkaProducer.flushTimeoutMs'"),
        ({"kafka.transactional.id": "x"}, "Option 'kafka.transactional.id' cannot be set"),
        ({"kafka.bootstrap.servers": "h:1"}, "the cluster comes from the metadata's write route"),
    ],
)
def test_bad_options_are_named(extra: dict[str, str], message: str) -> None:
    with pytest.raises(OptionsError) as caught:
        parse_sink_options({**BASE, **extra})
    assert message in str(caught.value)


def test_stream_id_is_required() -> None:
    with pytest.raises(OptionsError, match="Option 'streamId' is required"):
        parse_sink_options({"metadataService": "file", "metadataService.path": "/m.yaml"})


_HEADERS = ArrayType(StructType().add("key", StringType()).add("value", BinaryType()))


def test_columns_of_spark_kafka_sink_are_accepted() -> None:
    check_columns(
        StructType()
        .add("key", BinaryType())
        .add("value", StringType())
        .add("topic", StringType())
        .add("partition", IntegerType())
        .add("headers", _HEADERS)
        .add("other", LongType())
    )


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        (
            StructType().add("key", StringType()),
            "need a 'value' column (string or binary); got columns key",
        ),
        (
            StructType().add("value", LongType()),
            "Column 'value' of a write to format "
            "dynamic_kafka must be string or binary, got bigint",
        ),
        (
            StructType().add("value", StringType()).add("partition", LongType()),
            "Column 'partition' of a write to format dynamic_kafka must be int, got bigint",
        ),
        (
            StructType().add("value", StringType()).add("headers", ArrayType(StringType())),
            "Column 'headers' of a write to format dynamic_kafka must be "
            "array<struct<key:string,value:binary>>, got array<string>",
        ),
    ],
)
def test_wrong_columns_are_named(schema: StructType, message: str) -> None:
    with pytest.raises(OptionsError) as caught:
        check_columns(schema)
    assert message in str(caught.value)


def test_plan_resolves_the_route_when_called_and_closes_the_service() -> None:
    east = ClusterMetadata(frozenset({"orders"}), {"bootstrap.servers": "e:1"}, write=True)
    west = ClusterMetadata(frozenset({"orders"}), {"bootstrap.servers": "w:1"})
    service = InMemoryMetadataService([KafkaStream("orders", {"east": east, "west": west})])
    options = parse_sink_options({**BASE, "kafka.linger.ms": "7"})
    task = plan_write(options, lambda kind, opts: service)
    assert task.route.cluster_id == "east"
    assert task.producer_properties() == {
        "bootstrap.servers": "e:1",
        "linger.ms": "7",
        "enable.idempotence": "true",
        "message.timeout.ms": "120000",
        "partitioner": "murmur2_random",
    }
    flipped = ClusterMetadata(frozenset({"orders"}), {"bootstrap.servers": "w:1"}, write=True)
    service.set_streams([KafkaStream("orders", {"east": west, "west": flipped})])
    assert plan_write(options, lambda kind, opts: service).route.cluster_id == "west"


def test_a_cluster_property_wins_over_kafka_options_but_not_over_idempotence() -> None:
    route = WriteRoute(
        "orders",
        "east",
        frozenset({"orders"}),
        FrozenProperties({"bootstrap.servers": "e:1", "linger.ms": "1"}),
    )
    task = WriteTask(route, FrozenProperties({"linger.ms": "9", "enable.idempotence": "false"}))
    properties = task.producer_properties()
    assert properties["linger.ms"] == "1"
    assert properties["enable.idempotence"] == "true"
    assert properties["partitioner"] == "murmur2_random"  # the Java producer's, as Spark's sink
    chosen = WriteTask(route, FrozenProperties({"partitioner": "consistent_random"}))
    assert chosen.producer_properties()["partitioner"] == "consistent_random"


def test_exactly_once_needs_a_sink_id_and_lists_every_cluster_for_markers() -> None:
    with pytest.raises(OptionsError, match="Option 'sinkId' is required with deliveryGuarantee"):
        parse_sink_options({**BASE, "deliveryGuarantee": "exactlyonce"})
    options = parse_sink_options({**BASE, "deliveryGuarantee": "exactlyOnce", "sinkId": "w1"})
    assert (options.delivery_guarantee, options.sink_id) == ("exactlyOnce", "w1")
    east = ClusterMetadata(frozenset({"orders", "a"}), {"bootstrap.servers": "e:1"})
    west = ClusterMetadata(frozenset({"orders"}), {"bootstrap.servers": "w:1"}, write=True)
    empty = ClusterMetadata(frozenset(), {"bootstrap.servers": "x:1"})
    service = InMemoryMetadataService(
        [KafkaStream("orders", {"east": east, "west": west, "x": empty})]
    )
    task = plan_write(options, lambda kind, opts: service)
    assert task.exactly_once
    assert task.sink_id == "w1"
    # Markers are looked up on every topic of the stream there.
    assert [(m.cluster_id, m.topics) for m in task.marker_clusters] == [
        ("east", ("a", "orders")),
        ("west", ("orders",)),
    ]
    assert not task.sink_id_takeover
    assert task.route.marker_places == [("orders", 0)]
    two = WriteRoute("orders", "east", frozenset({"b", "a"}), FrozenProperties())
    assert two.marker_places == [("a", 0), ("b", 0)]


def test_sink_id_takeover_is_an_exactly_once_option_carried_by_the_task() -> None:
    exactly = {**BASE, "deliveryGuarantee": "exactlyOnce", "sinkId": "w1"}
    assert not parse_sink_options(exactly).sink_id_takeover
    with pytest.raises(OptionsError, match="Invalid value 'maybe' for option 'sinkIdTakeover'"):
        parse_sink_options({**exactly, "sinkIdTakeover": "maybe"})
    with pytest.raises(OptionsError, match="Option 'sinkIdTakeover' is for deliveryGuarantee"):
        parse_sink_options({**BASE, "sinkId": "w1", "sinkidtakeover": "true"})
    options = parse_sink_options({**exactly, "sinkidtakeover": "TRUE"})
    east = ClusterMetadata(frozenset({"orders"}), {"bootstrap.servers": "e:1"})
    service = InMemoryMetadataService([KafkaStream("orders", {"east": east})])
    task = plan_write(options, lambda kind, opts: service)
    assert (task.sink_id, task.exactly_once, task.sink_id_takeover) == ("w1", True, True)


def test_dedupe_headers_need_a_sink_id_and_travel_with_the_task() -> None:
    with pytest.raises(OptionsError, match="Option 'sinkId' is required with dedupeHeaders"):
        parse_sink_options({**BASE, "dedupeHeaders": "true"})
    with pytest.raises(OptionsError, match="Invalid value 'yes' for option 'dedupeHeaders'"):
        parse_sink_options({**BASE, "dedupeheaders": "yes", "sinkId": "w1"})
    assert not parse_sink_options(BASE).dedupe_headers
    options = parse_sink_options({**BASE, "dedupeheaders": "TRUE", "sinkId": "w1"})
    east = ClusterMetadata(frozenset({"orders"}), {"bootstrap.servers": "e:1"})
    service = InMemoryMetadataService([KafkaStream("orders", {"east": east})])
    task = plan_write(options, lambda kind, opts: service)
    assert (task.dedupe_headers, task.sink_id, task.exactly_once) == (True, "w1", False)


def test_a_stamp_names_sink_batch_partition_and_sequence() -> None:
    assert Stamp("w1", "7", 3).headers(41) == [
        ("dynamic_kafka.sink", b"w1"),
        ("dynamic_kafka.batch", b"7"),
        ("dynamic_kafka.partition", b"3"),
        ("dynamic_kafka.sequence", b"41"),
    ]
    assert [k for k, _ in Stamp("w1", "7", 3).headers(0)] == list(STAMP_HEADERS)
