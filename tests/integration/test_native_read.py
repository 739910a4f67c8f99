"""What is the compiled core's own on the executor read path, on a real broker, without Spark:
a differential test against the Python reader, and (test_native_security.py) TLS, SASL and the
fallback.

The read semantics both readers share (exact ranges, keys, headers, timestamps, markers, aborted
records, data loss, a deleted topic, the "stuck" message) are test_read.py's,
which runs each test on both readers.
"""

from __future__ import annotations

import itertools
import logging
import pickle
import uuid
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.integration.helpers import EstateFactory, requires_kafka, write_metadata
from tests.integration.read_tasks import READERS, make_task, read_table

from pyspark_dynamic_kafka.datasource import DynamicKafkaDataSource
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.source.executor.task import ReadTask
from pyspark_dynamic_kafka.source.schema import spark_schema

pytestmark = [
    pytest.mark.usefixtures("empty_consumer_pool"),
    pytest.mark.skipif(core() is None, reason="the compiled core is not installed (NATIVE=0)"),
]


# -- the differential test --------------------------------------------------------------------

_SIZES = st.sampled_from([0, 1, 10, 100, 1000, 64 << 10, 1 << 20])
_HEADER = st.tuples(
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=6),
    st.none() | st.binary(max_size=8),
)
_RECORD = st.fixed_dictionaries(
    {
        "key": st.none() | st.binary(max_size=16),
        "value": st.none() | _SIZES,
        "headers": st.none() | st.lists(_HEADER, min_size=1, max_size=3),
    }
)
#: Each chunk of records is produced plainly, or in a transaction that commits or aborts.
_CHUNKS = st.lists(
    st.tuples(
        st.lists(_RECORD, min_size=1, max_size=6), st.sampled_from(["plain", "commit", "abort"])
    ),
    min_size=1,
    max_size=4,
)


def _produce(cluster: Any, topic: str, codec: str, chunks: Sequence[tuple[list[Any], str]]) -> None:
    """Produce the chunks in order: plain ones by an ordinary producer, the others in a
    transaction that commits or aborts (a transactional producer cannot write outside one)."""
    config = {"compression.type": codec, "message.max.bytes": 4 << 20, "linger.ms": 5}
    plain = Producer(cluster.client_properties(**config))
    tx = Producer(cluster.client_properties(**config, **{"transactional.id": uuid.uuid4().hex}))
    tx.init_transactions(30)
    for n, (records, how) in enumerate(chunks):
        producer = plain if how == "plain" else tx
        if how != "plain":
            tx.begin_transaction()
        for i, record in enumerate(records):
            size = record["value"]
            value = None if size is None else bytes([(n * 7 + i) % 251]) * size
            producer.produce(
                topic, value=value, key=record["key"], headers=record["headers"], partition=0
            )
        producer.flush(60)
        if how == "commit":
            tx.commit_transaction(60)
        elif how == "abort":
            tx.abort_transaction(60)


@requires_kafka("read_committed skipping aborted transactions")
def test_both_readers_give_identical_tables(kafka_clusters: Any) -> None:
    # Each generated log is read with both isolation levels: whole, from every start offset to
    # its end, and cut into consecutive ranges at offsets drawn anywhere, markers and aborted
    # records first among them (where a micro-batch or a task may start). Each reader's reads
    # agree with its whole read, and the two readers give identical tables.
    east = kafka_clusters("east")["east"]

    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(
        chunks=_CHUNKS,
        codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
        headers=st.booleans(),
        data=st.data(),
    )
    def check(
        chunks: list[tuple[list[Any], str]], codec: str, headers: bool, data: st.DataObject
    ) -> None:
        topic = f"diff-{uuid.uuid4().hex[:12]}"
        east.create_topic(topic, partitions=1, config={"max.message.bytes": str(4 << 20)})
        _produce(east, topic, codec, chunks)
        _, high = east.watermarks(topic)[0]
        for isolation in ("read_committed", "read_uncommitted"):
            # The broker holds a fetch at the log's end this long; a range ending there waits.
            props = {"isolation.level": isolation, "fetch.wait.max.ms": "5"}

            def read(reader: str, start: int, end: int, props: dict[str, str] = props) -> pa.Table:
                task = make_task(
                    east, reader, (topic, 0, start, end), include_headers=headers, **props
                )
                return read_table(task)

            whole = {reader: read(reader, 0, high) for reader in READERS}
            assert whole["native"].equals(whole["python"]), (codec, isolation)
            offsets = whole["python"]["offset"].to_pylist()
            assert offsets == sorted(set(offsets))
            skipped = [o for o in range(high) if o not in set(offsets)]
            anywhere = st.integers(0, high)
            cut = (st.sampled_from(skipped) | anywhere) if skipped else anywhere
            bounds = sorted({0, high, *data.draw(st.lists(cut, max_size=4), label="cuts")})
            for reader in READERS:
                for start in range(1, high):
                    tail = whole[reader].filter(pc.greater_equal(whole[reader]["offset"], start))
                    got = read(reader, start, high)
                    assert got.equals(tail), (reader, start, codec, isolation)
                parts = [read(reader, s, e) for s, e in itertools.pairwise(bounds)]
                got = pa.concat_tables(parts)
                assert got.equals(whole[reader]), (reader, bounds, codec, isolation)

    check()


def test_every_codec_is_read_natively(kafka_clusters: Any) -> None:
    # The differential test draws its codec among others; here each codec is read for sure.
    east = kafka_clusters("east")["east"]
    for codec in ("gzip", "snappy", "lz4", "zstd"):
        east.create_topic(codec, partitions=1)
        records = [(f"k{i}", f"{codec}-{i}-" * 20) for i in range(200)]
        config = {"compression.type": codec, "linger.ms": 50}
        east.produce(codec, records, partition=0, config=config)
        tables = {r: read_table(make_task(east, r, (codec, 0, 10, 190))) for r in READERS}
        assert tables["native"]["offset"].to_pylist() == list(range(10, 190)), codec
        expected = [v.encode() for _, v in records[10:190]]
        assert tables["native"]["value"].to_pylist() == expected, codec
        assert tables["native"].equals(tables["python"]), codec


def test_a_cluster_the_core_cannot_serve_is_read_by_the_python_reader(
    estate: EstateFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # west's client properties ask for OIDC token retrieval, which needs libcurl: the compiled
    # core does not link it (librdkafka refuses the property), confluent-kafka's librdkafka
    # does. Under reader=auto the driver plans west for the Python reader, logs it once with
    # the reason, and east is still read by the core.
    setup = estate("east", "west")
    for name in ("east", "west"):
        setup[name].produce("orders", [(None, f"{name}{i}") for i in range(5)], partition=0)
    extra = {"west": {"sasl.oauthbearer.method": "oidc"}}
    streams = {"orders": [("east", ["orders"]), ("west", ["orders"])]}
    write_metadata(setup.meta, setup.clusters, streams, extra=extra)

    with caplog.at_level(logging.INFO, logger="pyspark_dynamic_kafka"):
        stream = DynamicKafkaDataSource(setup.options(reader="auto")).streamReader(
            spark_schema(False)
        )
        try:
            start = stream.initialOffset()
            end = stream.latestOffset(start, stream.getDefaultReadLimit())
            tasks = [pickle.loads(pickle.dumps(t)) for t in stream.partitions(start, end)]
            tasks += [pickle.loads(pickle.dumps(t)) for t in stream.partitions(start, end)]
            assert tasks and all(isinstance(t, ReadTask) for t in tasks)
            assert all(t.settings.engines == {"east": "direct", "west": "python"} for t in tasks)
            rows = {
                (row["cluster"], row["value"].decode())
                for task in tasks[: len(tasks) // 2]
                for batch in stream.read(task)
                for row in batch.to_pylist()
            }
        finally:
            stream.stop()
    assert rows == {(n, f"{n}{i}") for n in ("east", "west") for i in range(5)}
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reader=auto")]
    assert lines == [
        "reader=auto: cluster 'west' is read with the Python reader: librdkafka refused the client "
        'properties: Configuration property "sasl.oauthbearer.method" not supported in this '
        "build: OAuth/OIDC depends on libcurl and OpenSSL which were not available at build time"
    ]
