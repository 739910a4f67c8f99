"""Options shared with Spark's kafka source: defaults, precedence, batch or stream rules."""

from __future__ import annotations

import pytest
from tests.unit.conftest import BASE, rejection

from pyspark_dynamic_kafka.errors import OffsetsError, OptionsError
from pyspark_dynamic_kafka.offset_spec import (
    EARLIEST_POSITION,
    LATEST_POSITION,
    Position,
)
from pyspark_dynamic_kafka.source.config.options import parse_options


def test_spark_defaults() -> None:
    parsed = parse_options(BASE)
    assert parsed.fail_on_data_loss is True
    assert parsed.include_headers is False
    assert parsed.group_id_prefix == "spark-dynamic-kafka"
    assert parsed.max_trigger_delay_ms == 15 * 60 * 1000
    assert parsed.max_offsets_per_trigger is None and parsed.min_offsets_per_trigger is None
    assert parsed.min_partitions is None and parsed.max_records_per_partition is None
    assert (parsed.fetch_retries, parsed.fetch_retry_interval_ms) == (3, 10)
    assert parsed.timestamp_strategy == "error"
    assert parsed.ending is None


def test_starting_default_differs_between_stream_and_batch() -> None:
    assert parse_options(BASE, mode="stream").starting.default == LATEST_POSITION
    batch = parse_options(BASE, mode="batch")
    assert batch.starting.default == EARLIEST_POSITION
    assert batch.ending is not None and batch.ending.default == LATEST_POSITION


def test_timestamp_precedence_like_spark() -> None:
    by_ts = '{"east": {"orders": {"0": 1000}}}'
    offsets = '{"east": {"orders": {"0": 5}}}'
    everything = {
        **BASE,
        "startingtimestamp": "7000",
        "startingoffsetsbytimestamp": by_ts,
        "startingoffsets": offsets,
    }
    assert parse_options(everything).starting.default == Position("timestamp", 7000)
    everything.pop("startingtimestamp")
    spec = parse_options(everything).starting
    assert spec.default is None
    assert spec.specific == {("east", "orders", 0): Position("timestamp", 1000)}
    everything.pop("startingoffsetsbytimestamp")
    assert parse_options(everything).starting.specific == {
        ("east", "orders", 0): Position("offset", 5)
    }


def test_ending_precedence_for_batch() -> None:
    parsed = parse_options(
        {
            **BASE,
            "endingtimestamp": "9000",
            "endingoffsetsbytimestamp": '{"west": {"t": {"1": 10}}}',
            "endingoffsets": '{"west": {"t": {"1": 3}}}',
        },
        mode="batch",
    )
    assert parsed.ending is not None and parsed.ending.default == Position("timestamp", 9000)


@pytest.mark.parametrize("key", ["endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"])
def test_ending_options_rejected_for_streams(key: str) -> None:
    value = "latest" if key == "endingOffsets" else "5"
    if key == "endingOffsetsByTimestamp":
        value = '{"east": {"orders": {"0": 5}}}'
    options = {**BASE, key.lower(): value}
    with pytest.raises(OptionsError, match=f"'{key}' is not valid for streaming queries"):
        parse_options(options, mode="stream")
    parse_options(options, mode="any")  # the schema is asked before Spark picks a reader
    parse_options(options, mode="batch")


@pytest.mark.parametrize(
    ("key", "value", "needle"),
    [
        ("startingoffsets", "latest", "'startingOffsets' cannot start a batch read at 'latest'"),
        ("startingoffsets", '{"east": {"orders": {"1": -1}}}', "for east/orders/1"),
        ("endingoffsets", "earliest", "'endingOffsets' cannot end a batch read at 'earliest'"),
        ("endingoffsets", '{"east": {"orders": {"0": -2}}}', "for east/orders/0"),
    ],
)
def test_batch_rejects_latest_start_and_earliest_end(key: str, value: str, needle: str) -> None:
    with pytest.raises(OptionsError, match=needle):
        parse_options({**BASE, key: value}, mode="batch")


def test_latest_start_is_fine_for_streams() -> None:
    assert parse_options({**BASE, "startingoffsets": "latest"}).starting.default == LATEST_POSITION


@pytest.mark.parametrize(
    ("value", "millis"),
    [("15m", 900_000), ("30s", 30_000), ("500ms", 500), ("250", 250), ("1h", 3_600_000)],
)
def test_max_trigger_delay_durations(value: str, millis: int) -> None:
    assert parse_options({**BASE, "maxtriggerdelay": value}).max_trigger_delay_ms == millis


@pytest.mark.parametrize(
    ("key", "value", "canonical", "error"),
    [
        ("maxtriggerdelay", "soon", "maxTriggerDelay", OptionsError),
        ("failondataloss", "maybe", "failOnDataLoss", OptionsError),
        ("includeheaders", "yes", "includeHeaders", OptionsError),
        ("maxoffsetspertrigger", "0", "maxOffsetsPerTrigger", OptionsError),
        ("minpartitions", "-3", "minPartitions", OptionsError),
        ("maxrecordsperpartition", "many", "maxRecordsPerPartition", OptionsError),
        (
            "startingoffsetsbytimestampstrategy",
            "skip",
            "startingOffsetsByTimestampStrategy",
            OptionsError,
        ),
        ("fetchoffset.numretries", "-1", "fetchOffset.numRetries", OptionsError),
        ("startingtimestamp", "-5", "startingTimestamp", OffsetsError),
        ("startingtimestamp", "yesterday", "startingTimestamp", OffsetsError),
        *(
            ("startingoffsetsbytimestamp", value, "startingOffsetsByTimestamp", OffsetsError)
            for value in (
                '{"east": {"orders": {"0": -1}}}',
                '{"east": {"orders": {"x": 5}}}',
                "{}",
                "[1",
            )
        ),
    ],
)
def test_bad_values_name_key_and_value(
    key: str, value: str, canonical: str, error: type[OptionsError]
) -> None:
    message = rejection({**BASE, key: value}, error)
    assert f"'{canonical}'" in message and repr(value) in message


def test_min_above_max_rejected() -> None:
    with pytest.raises(OptionsError, match=r"minOffsetsPerTrigger' \(50\).*maxOffsetsPerTrigger"):
        parse_options({**BASE, "minoffsetspertrigger": "50", "maxoffsetspertrigger": "10"})
    parsed = parse_options({**BASE, "minoffsetspertrigger": "5", "maxoffsetspertrigger": "10"})
    assert (parsed.min_offsets_per_trigger, parsed.max_offsets_per_trigger) == (5, 10)


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("kafka.auto.offset.reset", "startingOffsets"),
        ("kafka.enable.auto.commit", "never committed"),
        ("kafka.key.deserializer", "read as bytes"),
        ("kafka.Value.Deserializer", "read as bytes"),
        ("kafka.interceptor.classes", "interceptors are not supported"),
    ],
)
def test_client_keys_spark_rejects_are_rejected_with_a_reason(key: str, reason: str) -> None:
    message = rejection({**BASE, key: "x"})
    assert f"'{key}'" in message and reason in message


def test_group_id_and_isolation_level_pass_through() -> None:
    parsed = parse_options(
        {**BASE, "kafka.group.id": "mine", "kafka.isolation.level": "read_committed"}
    )
    assert parsed.kafka_properties["group.id"] == "mine"
    assert parsed.kafka_properties["isolation.level"] == "read_committed"


def test_secrets_never_in_repr_of_parsed_options() -> None:
    parsed = parse_options(
        {
            **BASE,
            "kafka.sasl.password": "SENTINEL-kafka",
            "metadataservice.sasl.password": "SENTINEL-meta",
        }
    )
    assert "SENTINEL" not in repr(parsed)
    assert parsed.metadata_options["sasl.password"] == "SENTINEL-meta"


#: A format("kafka") job's option and its value there: what each refusal says.
_SPARK_OPTIONS = {
    ("subscribe", "orders"): ["Did you mean 'streamIds'?", "metadataService=singleCluster"],
    ("subscribePattern", "^orders"): ["Did you mean 'streamPattern'?"],
    ("assign", '{"orders": [0]}'): ["startingOffsets (and, for a batch read, endingOffsets)"],
    ("kafka.bootstrap.servers", "h:9092"): [
        "clusters.<id>.bootstrap.servers",
        "metadataService=singleCluster",
    ],
}


@pytest.mark.parametrize(("key", "value"), list(_SPARK_OPTIONS))
def test_spark_kafka_option_names_point_at_ours(key: str, value: str) -> None:
    message = rejection({**BASE, key.lower(): value})  # Spark hands keys lowercased
    assert f"'{key}'" in message, message
    assert all(said in message for said in _SPARK_OPTIONS[key, value]), message
    assert "Spark's kafka source" in message or key.startswith("kafka."), message


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("kafka.ssl.truststore.location", "/t.jks", "keytool -list -rfc"),
        ("kafka.ssl.keystore.type", "JKS", "keytool -importkeystore"),
        (
            "kafka.sasl.jaas.config",
            'com.sun.security.auth.module.Krb5LoginModule required keyTab="SENTINEL-k";',
            "sasl.mechanism=GSSAPI",
        ),
        ("kafka.sasl.login.callback.handler.class", "x.Y", "cannot load Java classes"),
        ("kafka.sasl.password", "${vault:secret/x:SENTINEL-k}", "only ${env:VAR} and"),
    ],
)
def test_java_client_options_without_an_equivalent_are_refused(
    key: str, value: str, said: str
) -> None:
    message = rejection({**BASE, key: value})
    assert f"Option '{key}'" in message and said in message
    assert "SENTINEL" not in message or "${vault:" in value


def test_java_client_options_with_an_equivalent_pass_as_given() -> None:
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="u" password="${env:PASSWORD}";'
    )
    parsed = parse_options({**BASE, "kafka.sasl.jaas.config": jaas})
    assert parsed.kafka_properties["sasl.jaas.config"] == jaas  # translated per cluster
