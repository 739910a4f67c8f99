"""The consumer pool: reuse by (cluster, properties, generation); other generations are closed."""

from __future__ import annotations

from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.kafka.pool import MAX_IDLE_PER_CLUSTER, ClientPool, consumer_config
from pyspark_dynamic_kafka.source.config.options import OPTIONS

PROPS = FrozenProperties({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"})


def test_a_new_generation_never_reuses_an_older_consumer() -> None:
    pool = ClientPool()
    first = pool.acquire("east", PROPS, 0)
    pool.release("east", PROPS, first, True, 60_000, 0)
    assert pool.acquire("east", PROPS, 0) is first  # same generation: reused
    pool.release("east", PROPS, first, True, 60_000, 0)
    second = pool.acquire("east", PROPS, 1)
    assert second is not first
    assert pool.idle_count() == 0  # the generation-0 consumer was closed, not kept
    pool.release("east", PROPS, second, True, 60_000, 1)
    other = FrozenProperties({**PROPS, "group.id": "h"})
    third = pool.acquire("east", other, 0)  # another query's consumers are left alone
    assert pool.idle_count() == 1
    pool.release("east", other, third, False, 60_000, 0)
    pool.close_all()


def test_idle_consumers_per_cluster_are_capped_least_recent_closed_first() -> None:
    # Each query has its own group id: consumers of queries that ended must not pile up.
    pool = ClientPool()
    queries = [
        FrozenProperties({**PROPS, "group.id": f"q{i}"}) for i in range(MAX_IDLE_PER_CLUSTER + 2)
    ]
    consumers = [pool.acquire("east", q) for q in queries]
    west = pool.acquire("west", PROPS)
    pool.release("west", PROPS, west, True, 60_000)
    for q, c in zip(queries, consumers, strict=True):
        pool.release("east", q, c, True, 60_000)
    assert pool.idle_count() == MAX_IDLE_PER_CLUSTER + 1  # west's is not east's to evict
    newest = queries[-1]
    assert pool.acquire("east", newest) is consumers[-1]
    assert pool.acquire("east", queries[0]) is not consumers[0]  # closed, a new one
    pool.close_all()


def test_a_consumer_without_group_id_gets_the_group_id_prefix_default() -> None:
    config = consumer_config({"bootstrap.servers": "h:1"})
    assert config["group.id"] == OPTIONS["groupIdPrefix"].default == "spark-dynamic-kafka"
    assert consumer_config({"bootstrap.servers": "h:1", "group.id": "g"})["group.id"] == "g"


def test_a_full_prefetch_queue_is_refilled_promptly_unless_the_properties_say_otherwise() -> None:
    # librdkafka's default (1000 ms) stalls every task whose ranges exceed the prefetch queue.
    assert consumer_config({"bootstrap.servers": "h:1"})["fetch.queue.backoff.ms"] == "10"
    custom = {"bootstrap.servers": "h:1", "fetch.queue.backoff.ms": "500"}
    assert consumer_config(custom)["fetch.queue.backoff.ms"] == "500"
