"""A real multi-broker fault under a running query: three Apache Kafka brokers, replication 3,
one broker killed (SIGKILL) and restarted while records are produced and read, by the compiled
core under the default reader=auto when it is installed (seen in a reading worker's memory map).

Skipped, with the reason, unless the run starts Apache Kafka brokers of its own.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from tests.integration.faults import native_expected, reading_with_core
from tests.integration.helpers import DEADLINE, EstateFactory, numbered, wait_until
from tests.integration.queries import memory_query

from pyspark_dynamic_kafka.kafka.admin import ClusterAdmin
from pyspark_dynamic_kafka.offset_spec import PositionKind
from pyspark_dynamic_kafka.testing.apache_kafka import ApacheKafkaCluster

PARTITIONS = 3


class _Producing(threading.Thread):
    """Produces rounds of 6 records (round-robin over the partitions) until stopped; ``values``
    are the records the brokers acknowledged (acks=all, idempotent: each once in the log)."""

    def __init__(self, cluster: ApacheKafkaCluster) -> None:
        super().__init__(daemon=True)
        self.cluster = cluster
        self.values: list[str] = []
        self.error: BaseException | None = None
        self._stopping = threading.Event()

    def run(self) -> None:
        round_ = 0
        try:
            while not self._stopping.is_set():
                values = numbered(f"r{round_}-", 6)
                records = [
                    {"key": v, "value": v, "partition": i % PARTITIONS}
                    for i, v in enumerate(values)
                ]
                self.cluster.produce("orders", records, timeout=DEADLINE)
                self.values += values
                round_ += 1
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def produced(self) -> int:
        """How many records were acknowledged so far (failing if producing failed)."""
        if self.error is not None:
            cause = self.error.__cause__
            raise AssertionError(f"producing failed: {self.error!r} (cause: {cause!r})")
        return len(self.values)

    def stop(self) -> list[str]:
        """Stop after the current round; every acknowledged value."""
        self._stopping.set()
        self.join(DEADLINE)
        assert not self.is_alive(), "the producer did not stop"
        self.produced()
        return self.values


def test_a_killed_and_restarted_broker_does_not_stop_the_query(
    spark: Any, kafka_estate: EstateFactory
) -> None:
    setup = kafka_estate(
        "east",
        brokers=3,
        partitions=PARTITIONS,
        replication_factor=3,
        config={"min.insync.replicas": "2"},
    )
    east = setup["east"]
    assert isinstance(east, ApacheKafkaCluster)
    producer = _Producing(east)
    properties = {k: str(v) for k, v in east.client_properties().items()}
    knew = ClusterAdmin("east", properties, timeout_ms=int(DEADLINE * 1000), retries=0)
    partitions = [("orders", p) for p in range(PARTITIONS)]
    after: list[object] = []  # the listing's answer, or its error

    def listing_after_the_kill() -> None:
        try:
            after.append(knew.list_offsets(partitions, PositionKind.LATEST))
        except BaseException as exc:  # asserted below
            after.append(exc)

    def elected() -> bool:
        fresh = ClusterAdmin("east", properties, timeout_ms=5_000)
        listed = fresh.request("list", lambda c: c.list_topics("orders", timeout=5))
        return all(p.leader not in (1, -1) for p in listed.topics["orders"].partitions.values())

    with memory_query(spark, setup.options(), "fault") as query:

        def read_more(than: int, what: str) -> int:
            """Wait until the producer acknowledged and the query read 30 records more."""
            target = than + 30
            wait_until(lambda: producer.produced() >= target, what=f"{target} produced ({what})")
            wait_until(lambda: len(query.healthy_values()) >= target, what=f"{target} read")
            return target

        producer.start()
        try:
            seen = read_more(0, "before the fault")
            if native_expected():  # reader=auto reads with the compiled core where installed
                wait_until(
                    lambda: reading_with_core(os.getpid(), east),
                    what="a Python worker reading east with the compiled core",
                )
                # ... with its direct fetch path, as the progress shows users (on every
                # listener the suite's clients use: PLAINTEXT, or SASL_SSL in make test-secure).
                assert query.read_paths() == {"east": {"direct"}}
            before = knew.list_offsets(partitions, PositionKind.LATEST)  # knows the leaders
            east.kill_broker(1)  # a leader of a partition (leaders are spread over the brokers)
            listing = threading.Thread(target=listing_after_the_kill, daemon=True)
            listing.start()
            seen = read_more(seen, "broker 1 down")
            # librdkafka's client that knew a killed leader answered -1001 (no offset) after
            # its whole timeout (30 s of 30 s), though the cluster had elected another leader
            # after ~12 s. Before a new client asked again in short waits (kafka/waits.py),
            # this listing ended only with its timeout (DEADLINE), and failed.
            wait_until(elected, what="partition leaders other than the killed broker 1")
            listing.join(60.0)  # the waits grow to 30 s at most
            assert after, "the listing did not end with the election"
            (answer,) = after
            assert isinstance(answer, dict), f"the listing failed: {answer!r}"
            assert set(answer) == set(partitions)
            assert all(answer[tp] >= offset for tp, offset in before.items())
            east.start_broker(1)
            read_more(seen, "broker 1 back")
        finally:
            expected = producer.stop()
        query.expect(expected)  # every acknowledged record exactly once, nothing else
        assert query.query.isActive and query.query.exception() is None
        assert len(set(expected)) == len(expected) >= 90


def test_a_listing_does_not_wait_for_a_stopped_or_killed_broker_named_controller(
    kafka_estate: EstateFactory,
) -> None:
    # librdkafka sends DescribeTopics (the topic ids) to the controller its last Metadata answer
    # named; on KRaft that is any live broker, here made the one stopped next. Before the
    # listing asked any broker first, it waited for that broker until its timeout. A killed
    # broker stays "live" until the cluster fences it (broker.session.timeout.ms), so answers
    # may still name it: before each DescribeTopics waited 3 s at most and the listing asked
    # for metadata again, such a listing waited its whole timeout and failed.
    setup = kafka_estate("east", brokers=3, partitions=PARTITIONS, replication_factor=3)
    east = setup["east"]
    assert isinstance(east, ApacheKafkaCluster)
    properties = {k: str(v) for k, v in east.client_properties().items()}
    admin = ClusterAdmin("east", properties, timeout_ms=20_000)
    # create_topic waited until every broker shows the topic, so any broker may answer
    before = admin.list_topics(["orders", "absent"])
    assert before.partitions == {"orders": (0, 1, 2)} and before.absent == {"absent"}
    named = admin.request("name a controller", lambda c: c.list_topics(timeout=20).controller_id)
    east.stop_broker(named)
    after = admin.list_topics(["orders", "absent"])
    assert (after.partitions, after.absent, after.ids) == (
        before.partitions,
        before.absent,
        before.ids,
    )
    assert set(after.ids) == {"orders"}

    east.start_broker(named)
    named = admin.request("name a controller", lambda c: c.list_topics(timeout=20).controller_id)
    east.kill_broker(named)
    while_live = 0

    def fenced() -> bool:
        # Listings until the cluster no longer answers the killed broker as live (answers before
        # that name it as the controller about one time in three); on a slow listener the first
        # listing may itself last until the broker is fenced
        nonlocal while_live
        brokers = admin.request("list brokers", lambda c: c.list_topics(timeout=20).brokers)
        listed = admin.list_topics(["orders", "absent"])
        assert (listed.partitions, listed.absent, listed.ids) == (
            before.partitions,
            before.absent,
            before.ids,
        )
        while_live += int(named in brokers)
        return named not in brokers

    wait_until(fenced, what=f"broker {named} fenced")
    assert while_live >= 1  # a listing began while the killed broker was still answered as live
