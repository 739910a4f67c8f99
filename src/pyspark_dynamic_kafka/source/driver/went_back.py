"""Driver side: offsets that went back, told apart by topic id (KIP-516).

A partition whose latest offset is below the next offset the query was going to read lost
records, but what to read next depends on why:

- its topic has **another id** than the checkpoint records: the topic was deleted and recreated.
  The new topic is read from its earliest offset (all of its records are new), even when its
  end is already past the checkpointed offset (without ids that recreation is not seen at all);
- its topic has **the same id**: the log was truncated (an unclean leader election, a replica
  that lost its unflushed tail). The query continues from the new end: the records that remain
  were read already and are not read again;
- **no id** on either side (brokers before Kafka 2.8, a checkpoint written before ids were
  recorded): the topic is taken for recreated and read from its earliest offset, as before ids.

Each is a :class:`~pyspark_dynamic_kafka.source.driver.reconcile.Loss` whose ``what`` names the
case (:func:`went_back`); where the micro-batch's range of such a partition begins is
:func:`range_begin`, the one rule for the driver's planning and for a micro-batch replayed from
the checkpoint.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark_dynamic_kafka.offset_spec import PartitionKey

__all__ = ["RECREATED", "TRUNCATED", "WENT_BACK", "TopicIds", "range_begin", "went_back"]

#: Topic ids by (cluster, topic).
TopicIds = Mapping[tuple[str, str], str]

#: The topic has another id: deleted and recreated (read from its earliest offset).
RECREATED = "the topic was recreated"
#: The topic has the same id and its end went back: the log was truncated (continue at its end).
TRUNCATED = "the log was truncated"
#: The end went back and the ids are not known (read from the earliest offset, as before ids).
WENT_BACK = "its latest offset went back"


def went_back(
    checkpointed: int, latest: int, recorded: str | None, listed: str | None
) -> str | None:
    """What happened to a partition, as a loss's ``what``; ``None``: nothing was lost.

    Parameters
    ----------
    checkpointed:
        The next offset the query was going to read.
    latest:
        The partition's latest offset now.
    recorded, listed:
        The topic's id the checkpoint records and the one the cluster reports now (``None``:
        not known).
    """
    if recorded and listed and recorded != listed:
        return f"{RECREATED} (topic id {recorded}, now {listed}): read from its earliest offset"
    if latest >= checkpointed:
        return None
    if recorded and listed:
        return (
            f"{TRUNCATED} (same topic id {listed}): continuing from its new end, the records "
            "left were read already"
        )
    return WENT_BACK  # as before topic ids: the once-logged warning says why


def range_begin(
    key: PartitionKey,
    start: int,
    end: int,
    ids: tuple[TopicIds, TopicIds],
    rewound: Mapping[PartitionKey, int],
) -> int:
    """Where a micro-batch's range of ``key`` from ``start`` to ``end`` begins.

    ``ids``: the topic ids of the micro-batch's start and end offsets. A recreated topic (or,
    without ids, an end that went back) begins at ``rewound`` (the earliest offset seen when
    the loss was found; 0 when unknown, e.g. a micro-batch replayed after a restart: the
    executor skips what is gone); a truncated log begins at its end (nothing read).
    """
    pair = (key[0], key[1])
    what = went_back(start, end, ids[0].get(pair), ids[1].get(pair))
    if what is None:
        return start
    if what.startswith(TRUNCATED):
        return end
    return rewound.get(key, 0)
