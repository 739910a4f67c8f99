"""``removedClusterRetentionMs``: a cluster removed from the metadata and re-added, on both sides
of the retention window, through real queries (exact records each time)."""

from __future__ import annotations

from typing import Any

from tests.integration.helpers import EstateFactory, numbered, produce, wait_until
from tests.integration.queries import MemoryQuery, memory_query

from pyspark_dynamic_kafka.monitoring.progress import offset_document


def _retained(offset: dict[str, Any]) -> dict[str, Any]:
    return offset.get("retained", {})  # type: ignore[no-any-return]


def _ever_retained(query: MemoryQuery) -> list[dict[str, Any]]:
    """The ``retained`` blocks of every recent progress's end offset."""
    ends = [p["sources"][0]["endOffset"] for p in query.query.recentProgress]
    return [_retained(offset_document(e)) for e in ends]


def test_a_cluster_re_added_within_the_window_resumes_exactly_where_it_stopped(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west", partitions=2)
    east, west = setup["east"], setup["west"]
    expected = produce(east, "orders", numbered("a", 10), 2)
    expected += produce(west, "orders", numbered("w", 10), 2)
    options = setup.options(removedClusterRetentionMs="600000")
    with memory_query(spark, options, "retain") as query:
        query.expect(expected)

        setup.route("west")  # east leaves the metadata: its offsets are retained, not read
        wait_until(lambda: "east" not in query.offsets()["clusters"], what="east to leave")
        retained = _retained(query.offsets())
        assert retained["east"]["orders"]["offsets"] == {"0": 5, "1": 5}
        assert isinstance(retained["east"]["orders"]["removedAtMs"], int)
        unread = produce(east, "orders", numbered("b", 6), 2)  # produced while east is removed
        expected += produce(west, "orders", numbered("x", 4), 2)
        query.expect(expected)  # nothing of east while it is out of the metadata

        setup.route("east", "west")  # back within the window: b, and a not again
        expected += unread
        query.expect(expected)
        wait_until(
            lambda: query.offsets()["clusters"].get("east") == {"orders": {"0": 8, "1": 8}},
            what="east's offsets back in the offset JSON",
        )
        assert "retained" not in query.offsets()


def test_a_cluster_re_added_after_the_window_starts_over(spark: Any, estate: EstateFactory) -> None:
    setup = estate("east", "west", partitions=2)
    east, west = setup["east"], setup["west"]
    first = produce(east, "orders", numbered("a", 10), 2)
    expected = first + produce(west, "orders", numbered("w", 10), 2)
    options = setup.options(removedClusterRetentionMs="3000")
    with memory_query(spark, options, "expire") as query:
        query.expect(expected)

        setup.route("west")
        wait_until(lambda: "east" not in query.offsets()["clusters"], what="east to leave")
        wait_until(
            lambda: _ever_retained(query)[-1] == {} and any(_ever_retained(query)),
            what="east retained, then dropped when its 3 s window ended",
        )
        later = produce(east, "orders", numbered("b", 6), 2)

        setup.route("east", "west")  # after the window: discoveryStartingOffsets=earliest
        expected += first + later  # east is read again from its start: a twice, b once
        query.expect(expected)
        assert "retained" not in query.offsets()


def test_without_a_window_a_removed_cluster_leaves_nothing_behind(
    spark: Any, estate: EstateFactory
) -> None:
    setup = estate("east", "west", partitions=1)
    expected = produce(setup["east"], "orders", ["a"]) + produce(setup["west"], "orders", ["w"])
    with memory_query(spark, setup.options(), "noretain") as query:
        query.expect(expected)
        setup.route("west")
        wait_until(lambda: "east" not in query.offsets()["clusters"], what="east to leave")
        assert not any(_ever_retained(query))
