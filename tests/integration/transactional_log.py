"""A log of every shape a read_committed reader meets, and the Java consumer's reads of it.

:func:`write_log` fills the partitions of a topic with aborted and committed transactions of
one producer and of two interleaved, transaction markers next to each other, records of a plain
and of an idempotent producer (with and without a producer id), and a compacted part: the log
cleaner removed the overwritten records of some keys and the records of aborted transactions
there, leaving their markers and producer ids behind. Partitions differ: each step writes to
some of them only.

:func:`java_reads` runs the Java consumer (``java/ConsumerReads.java``, the client under
Spark's ``format("kafka")``) over that log from every start offset: what every reader of this
project must return for a range, by the Java consumer's rules rather than by a model of them.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from tests.integration.compaction import COMPACTED, log_offsets
from tests.integration.helpers import plaintext_servers, wait_until

from pyspark_dynamic_kafka.testing import BaseKafkaCluster
from pyspark_dynamic_kafka.testing.kafka_jars import ensure_kafka_jars, find_java

#: The Java consumer's reads: isolation -> start offset -> partition -> [(offset, value)].
Reads = dict[str, dict[int, dict[int, list[tuple[int, str]]]]]

_JAVA = Path(__file__).with_name("java") / "ConsumerReads.java"


@dataclass
class _Writer:
    """The producers of :func:`write_log` and what they wrote: values by fate."""

    cluster: BaseKafkaCluster
    topic: str
    partitions: int
    step: int = 0
    committed: set[str] = field(default_factory=set)
    aborted: set[str] = field(default_factory=set)
    #: Partition -> offset -> (key, value) of every record written, whatever its fate.
    placed: dict[int, dict[int, tuple[str, str]]] = field(default_factory=lambda: defaultdict(dict))

    def producer(self, **config: Any) -> Any:
        producer = Producer(self.cluster.client_properties(**{"linger.ms": 0, **config}))
        if "transactional.id" in config:
            producer.init_transactions(60)
        return producer

    def send(
        self, producer: Any, name: str, count: int, keys: str = "", every: bool = False
    ) -> list[str]:
        """``count`` records of ``name`` as one batch to some partitions (which, moves with each
        step), or to ``every`` one; keyed ``keys<i>`` when given (records overwriting each other
        under compaction), else by their own value. The values, pending their transaction's
        fate."""
        self.step += 1
        values: list[str] = []
        for p in range(self.partitions):
            if (self.step + p) % 4 == 3 and not every:
                continue
            for i in range(count):
                value = f"{name}.{i}.p{p}"
                key = f"{keys}{i}" if keys else value

                def placed(
                    err: Any, msg: Any, p: int = p, key: str = key, value: str = value
                ) -> None:
                    assert err is None, err
                    self.placed[p][msg.offset()] = (key, value)

                producer.produce(self.topic, key=key, value=value, partition=p, on_delivery=placed)
                values.append(value)
        producer.flush(60)
        return values


def write_log(cluster: BaseKafkaCluster, topic: str, partitions: int = 3) -> dict[int, int]:
    """Fill ``topic`` (created here, ``partitions`` partitions) with the log described above;
    the end offset of each partition. The compacted part is written first and left to the log
    cleaner until it holds exactly the survivors; the topic is then no longer compacted."""
    cluster.create_topic(topic, partitions=partitions, config=COMPACTED)
    w = _Writer(cluster, topic, partitions)
    plain = w.producer()
    idempotent = w.producer(**{"enable.idempotence": True})
    t1 = w.producer(**{"transactional.id": f"t1-{uuid.uuid4().hex}"})
    t2 = w.producer(**{"transactional.id": f"t2-{uuid.uuid4().hex}"})

    def begin(*producers: Any) -> None:
        for producer in producers:
            producer.begin_transaction()

    def end(producer: Any, commit: bool, values: Iterable[str]) -> None:
        if commit:
            producer.commit_transaction(60)
            w.committed.update(values)
        else:
            producer.abort_transaction(60)
            w.aborted.update(values)

    # -- compacted: keys k0..k2 overwritten; aborted records the cleaner removes -------------
    w.committed.update(w.send(plain, "plain-k", 3, keys="k"))
    begin(t1)
    end(t1, False, w.send(t1, "t1-aborted-a", 3))
    begin(t1)
    end(t1, True, w.send(t1, "t1-committed-a", 2))
    w.committed.update(w.send(idempotent, "idem-k", 3, keys="k"))
    begin(t1, t2)
    t1_values = w.send(t1, "t1-aborted-b", 1)
    t2_values = w.send(t2, "t2-committed-b", 2)
    t1_values += w.send(t1, "t1-aborted-c", 1)
    end(t2, True, t2_values)
    w.committed.update(w.send(plain, "plain-k-last", 1, keys="k"))
    end(t1, False, t1_values)
    time.sleep(0.5)  # past segment.ms: the next records roll a segment, the rest is cleanable
    w.committed.update(w.send(plain, "tail", 1, every=True))
    _wait_for_the_cleaner(w)

    # -- not compacted from here ---------------------------------------------------------------
    admin = AdminClient(cluster.client_properties())
    resource = ConfigResource("topic", topic, set_config={"cleanup.policy": "delete"})
    for future in admin.alter_configs([resource]).values():
        future.result(60)
    begin(t1)  # the layout: aborted, then committed by the same producer, then plain
    aborted = w.send(t1, "t1-aborted-d", 4) + w.send(t1, "t1-aborted-e", 3)
    end(t1, False, aborted)
    begin(t1)
    end(t1, True, w.send(t1, "t1-committed-d", 3))
    w.committed.update(w.send(plain, "plain-d", 2))
    begin(t1, t2)
    t1_values = w.send(t1, "t1-committed-f", 2)
    t2_values = w.send(t2, "t2-aborted-f", 2)
    w.committed.update(w.send(idempotent, "idem-f", 1))
    t1_values += w.send(t1, "t1-committed-g", 1)
    end(t1, True, t1_values)
    end(t2, False, t2_values)
    begin(t2)
    end(t2, True, w.send(t2, "t2-committed-h", 2))
    begin(t1, t2)  # two markers next to each other
    t1_values = w.send(t1, "t1-aborted-i", 1)
    t2_values = w.send(t2, "t2-aborted-i", 2)
    end(t1, False, t1_values)
    end(t2, False, t2_values)
    w.committed.update(w.send(plain, "plain-j", 2))
    for producer in (plain, idempotent, t1, t2):
        producer.flush(60)
    return {p: cluster.watermarks(topic)[p][1] for p in range(partitions)}


def _wait_for_the_cleaner(w: _Writer) -> None:
    """Wait until every partition holds exactly its survivors: committed and plain records
    whose key no later committed or plain record overwrote."""
    for p in range(w.partitions):
        latest: dict[str, int] = {}
        for offset, (key, value) in sorted(w.placed[p].items()):
            if value in w.committed:
                latest[key] = offset
        survivors = {o: w.placed[p][o][1] for o in latest.values()}
        log: dict[int, str] = {}

        def cleaned(
            p: int = p, log: dict[int, str] = log, want: dict[int, str] = survivors
        ) -> bool:
            log.clear()
            log.update(log_offsets(w.cluster, w.topic, p))
            return log == want

        try:
            wait_until(cleaned, what=f"the log cleaner to leave the survivors of partition {p}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: it holds {log}, not {survivors}") from None


def java_reads(
    cluster: BaseKafkaCluster, topic: str, partitions: int, isolations: Sequence[str]
) -> Reads:
    """What the Java consumer reads of ``topic`` from every start offset, per isolation level."""
    jars = ensure_kafka_jars()
    command = [find_java(), "-cp", f"{jars}/*", str(_JAVA), plaintext_servers(cluster), topic]
    done = subprocess.run(
        [*command, str(partitions), *isolations],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the Java consumer failed ({done.returncode}): {done.stderr[-4000:]}")
    reads: Reads = {i: defaultdict(lambda: defaultdict(list)) for i in isolations}
    for line in done.stdout.splitlines():
        isolation, start, partition, offset, value = line.split(" ", 4)
        reads[isolation][int(start)][int(partition)].append((int(offset), value))
    return reads
