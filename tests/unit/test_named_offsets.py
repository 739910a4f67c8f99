"""Offset JSON options against the partitions read: every name checked, messages that help."""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.errors import OffsetsError
from pyspark_dynamic_kafka.offset_spec import EARLIEST_POSITION, PositionSpec
from pyspark_dynamic_kafka.source.driver.named_offsets import check_named_partitions

READ = [("east", "orders", 0), ("east", "orders", 1), ("east", "orders", 2), ("west", "pay", 5)]


def _spec(*keys: tuple[str, str, int], option: str = "startingOffsets") -> PositionSpec:
    return PositionSpec({k: EARLIEST_POSITION for k in keys}, None, option)


def test_names_among_those_read_pass_and_options_without_names_too() -> None:
    check_named_partitions([_spec(("east", "orders", 1)), None], READ)
    check_named_partitions([PositionSpec({}, EARLIEST_POSITION, "startingOffsets")], [])


@pytest.mark.parametrize(
    ("key", "says"),
    [
        (
            ("easst", "orders", 0),
            "cluster 'easst', which the query does not read. Did you mean 'east'?",
        ),
        (
            ("east", "order", 0),
            "topic 'order' on cluster 'east', which the query does not read "
            "there. Did you mean 'orders'?",
        ),
        (("west", "orders", 0), "topic 'orders' on cluster 'west'"),
        (("east", "orders", 3), "partition 3 of east/orders, which has partitions 0-2 now."),
    ],
)
def test_each_unknown_name_is_an_error_saying_what_is_read(
    key: tuple[str, str, int], says: str
) -> None:
    with pytest.raises(OffsetsError) as raised:
        check_named_partitions(
            [None, _spec(("east", "orders", 0), key, option="endingOffsets")], READ
        )
    message = str(raised.value)
    assert message.startswith("Option 'endingOffsets' names ")
    assert says in message
    assert "The query reads east/orders (partitions 0-2), west/pay (partitions 5)." in message


def test_every_problem_is_listed_once() -> None:
    spec = _spec(("north", "a", 0), ("north", "a", 1), ("east", "orders", 9))
    with pytest.raises(OffsetsError) as raised:
        check_named_partitions([spec], READ)
    message = str(raised.value)
    assert message.count("cluster 'north'") == 1
    assert "partition 9 of east/orders" in message
    with pytest.raises(OffsetsError, match="reads nothing \\(no partition yet\\)"):
        check_named_partitions([spec], [])
