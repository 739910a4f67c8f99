"""The compiled core's direct produce path (``writer=native``) on Apache Kafka: the sink writes
an exact record set over SASL_SSL with SCRAM-SHA-512 (the driver plans the cluster on
``direct``), atLeastOnce and exactlyOnce's transactions; and a broker stopped mid-write (the
leader of some partitions) has the producer send its batches again to the new leaders: every
record once, none lost, none duplicated (the broker drops a batch it already wrote by the
producer id and sequence).

PLAINTEXT, every column kind and keyed rows where Spark's own sink puts them are
``test_sink_write.py``'s with ``writer=native`` (the direct path too)."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from typing import Any

import pyarrow as pa
from tests.engine_roles import skip_without_core
from tests.integration.helpers import secured_cluster, skip_without_local_kafka, wait_until
from tests.integration.sink_records import (
    committed_values,
    keyed_rows,
    read_topic,
    sink_options,
    write_routes,
)

from pyspark_dynamic_kafka.engines.choice import write_engine
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.sink.executor.markers import committed_markers
from pyspark_dynamic_kafka.sink.executor.task import MarkerCluster, WriteTask
from pyspark_dynamic_kafka.sink.executor.transaction import produce_transaction
from pyspark_dynamic_kafka.sink.route import WriteRoute
from pyspark_dynamic_kafka.testing import set_scram_password
from pyspark_dynamic_kafka.testing.tls import sasl_ssl_scram_client_properties


def test_the_sink_writes_exact_records_over_sasl_ssl_scram_sha_512(
    spark: Any, kafka_clusters: Any, tmp_path: Any
) -> None:
    skip_without_core("direct")
    east = secured_cluster(kafka_clusters)
    east.create_topic("orders", partitions=3)
    east.create_topic("audit", partitions=2)
    password = f"scram-{uuid.uuid4().hex}"
    set_scram_password(east, "scram-writer", password)
    secured = sasl_ssl_scram_client_properties(east, "scram-writer", password, "SCRAM-SHA-512")
    meta = tmp_path / "streams.yaml"
    write_routes(
        meta, {"east": east}, [("east", ["orders", "audit"], True)], extra={"east": secured}
    )
    properties = {**secured, "enable.idempotence": "true", "partitioner": "murmur2_random"}
    assert write_engine("native", "east", properties).name == "direct"
    _, df = keyed_rows(
        spark,
        300,
        4,
        "IF(id % 3 = 0, 'audit', 'orders') AS topic",
        "IF(id % 5 = 0, 1, NULL) AS partition",
        "IF(id % 2 = 0, array(named_struct('key', 'h', 'value', CAST(value AS BINARY))), "
        "NULL) AS headers",
    )
    df.repartition(2).write.format("dynamic_kafka").options(
        **sink_options(meta, writer="native")
    ).mode("append").save()
    for topic, ids in (
        ("orders", [i for i in range(300) if i % 3]),
        ("audit", [i for i in range(300) if i % 3 == 0]),
    ):
        got = sorted(
            ((r.value, r.key, r.headers) for r in read_topic(east, topic)),
            key=lambda r: int(r[0][1:]),
        )
        expected = [
            (
                f"v{i}",
                None if i % 4 == 0 else f"k{i}",
                (("h", f"v{i}".encode()),) if i % 2 == 0 else (),
            )
            for i in ids
        ]
        assert got == expected, topic
        by_value = {r.value: r.partition for r in read_topic(east, topic)}
        assert all(by_value[f"v{i}"] == 1 for i in ids if i % 5 == 0), topic


def test_exactly_once_transactions_write_exact_records_over_sasl_ssl_scram_sha_512(
    kafka_clusters: Any,
) -> None:
    """exactlyOnce's tasks on the direct path (planned there by the driver), over SASL_SSL:
    the transaction and group coordinators are found and spoken to over SCRAM-SHA-512 too; a
    retry of the task finds its marker and writes nothing."""
    skip_without_core("direct")
    east = secured_cluster(kafka_clusters)
    east.create_topic("orders", partitions=3)
    password = f"scram-{uuid.uuid4().hex}"
    set_scram_password(east, "scram-writer", password)
    secured = sasl_ssl_scram_client_properties(east, "scram-writer", password, "SCRAM-SHA-512")
    frozen = FrozenProperties(secured)
    route = WriteRoute("orders", "east", frozenset({"orders"}), frozen)
    task = WriteTask(
        route,
        flush_timeout_ms=60_000,
        exactly_once=True,
        sink_id="scram-txn",
        marker_clusters=(MarkerCluster("east", frozen, ("orders",)),),
    )
    engine = write_engine("native", "east", task.producer_properties(), exactly_once=True)
    assert engine.name == "direct"
    task = dataclasses.replace(task, engine=engine.name)
    rows = [f"v{i}" for i in range(500)]
    batches = [pa.record_batch({"value": rows[:250]}), pa.record_batch({"value": rows[250:]})]
    report = produce_transaction(task, batches, batch_id=4, partition=1)
    assert (report.rows, report.skipped) == ({"orders": 500}, False)
    assert committed_values(east, "orders", len(rows)) == sorted(rows)
    (marker,) = committed_markers(task.marker_clusters[0], "scram-txn", 1, 60_000)
    assert (marker.batch, marker.where) == (4, "east/orders-0")
    again = produce_transaction(task, batches, batch_id=4, partition=1)
    assert again.skipped
    assert len(read_topic(east, "orders", "read_uncommitted")) == 500


def test_a_leader_stopped_mid_write_loses_and_duplicates_nothing(
    kafka_clusters: Any,
) -> None:
    skip_without_core("direct")
    skip_without_local_kafka("three Apache Kafka brokers, one of them stopped")
    east = kafka_clusters("east", brokers_per_cluster=3)["east"]
    east.create_topic("orders", partitions=6, replication_factor=3)
    producer = _direct_producer({"bootstrap.servers": east.bootstrap_servers}, 120_000)
    per_batch = 1_000

    def batch(b: int) -> pa.RecordBatch:
        ids = range(b * per_batch, (b + 1) * per_batch)
        return pa.record_batch(
            {
                "key": pa.array([f"k{i}".encode() for i in ids], pa.binary()),
                "value": pa.array([f"v{i}".encode() * 5 for i in ids], pa.binary()),
            }
        )

    going, stopped = threading.Event(), threading.Event()

    def stop_a_broker() -> None:
        going.wait()
        east.stop_broker(1)
        stopped.set()

    stopper = threading.Thread(target=stop_a_broker)
    stopper.start()
    # Rows keep coming (a batch every 20 ms, each sent after linger.ms), the broker is stopped
    # once 50 batches went, and rows come on until 50 batches after it stopped: requests to it
    # are in flight when it goes.
    batches, after = 0, 0
    try:
        while after < 50 and batches < 1_000:
            producer.send(batch(batches), "orders")
            batches += 1
            if batches == 50:
                going.set()
            after += stopped.is_set()
            time.sleep(0.02)
        left = producer.flush(120_000)
        rows, _, error = producer.deliveries()
        retries = producer.retries()
    finally:
        going.set()
        producer.close()
        stopper.join()
    total = batches * per_batch
    assert (left, error) == (0, None)
    assert retries > 0  # its batches were sent again, to the new leaders
    assert rows == {"orders": total}
    wait_until(lambda: sum(e for _, e in east.watermarks("orders").values()) >= total, what="all")
    values = [r.value for r in read_topic(east, "orders", "read_uncommitted")]
    assert len(values) == total == len(set(values))


def test_a_refused_password_fails_the_write_with_the_brokers_reason(
    kafka_clusters: Any,
) -> None:
    """An authentication the broker refuses is no retriable error: the producer fails at once
    with the broker's reason (as the Java producer does), not after ``message.timeout.ms``
    as a timeout, and the password is nowhere in it."""
    skip_without_core("direct")
    east = secured_cluster(kafka_clusters)
    east.create_topic("orders", partitions=2)
    set_scram_password(east, "scram-refused", f"scram-{uuid.uuid4().hex}")
    wrong = f"wrong-{uuid.uuid4().hex}"
    secured = sasl_ssl_scram_client_properties(east, "scram-refused", wrong, "SCRAM-SHA-512")
    # message.timeout.ms past the flush's wait: a timeout would leave the rows waiting, unfailed
    producer = _direct_producer(secured, 600_000)
    try:
        producer.send(pa.record_batch({"value": pa.array([b"v0", b"v1"], pa.binary())}), "orders")
        left = producer.flush(120_000)
        rows, _, error = producer.deliveries()
    finally:
        producer.close()
    assert (left, rows) == (0, {})
    assert error is not None
    topic, reason = error
    assert topic == "orders"
    assert "authentication failed" in reason, reason
    assert wrong not in reason


def _direct_producer(properties: dict[str, str], message_timeout_ms: int) -> Any:
    """The core's Producer on the direct path, of the sink's producer configuration over
    ``properties`` (idempotent, partitioned as Spark's sink), records timing out after
    ``message_timeout_ms``."""
    compiled = core()
    assert compiled is not None
    config = {
        **properties,
        "enable.idempotence": "true",
        "partitioner": "murmur2_random",
        "message.timeout.ms": str(message_timeout_ms),
    }
    return compiled.Producer(sorted(config.items()), None, direct=True)
