"""Avro values decoded inside the compiled core's read (the core's ``Reader`` decodes each
batch's column before the batch reaches Python), on a real broker without Spark: the same rows,
schema ids and ``_corrupt_value`` as the Python reader's, the core's decoder never asked again
by Python for a batch whose writer schemas it holds.
"""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from tests.integration.read_tasks import make_task
from tests.unit.avro_schemas import ORDER_V1, ORDER_V2

from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.engines.decode_core import NativeDecoder
from pyspark_dynamic_kafka.source.executor.read import read_task
from pyspark_dynamic_kafka.source.schema import AvroColumn, AvroColumns
from pyspark_dynamic_kafka.testing.schema_registry import LocalSchemaRegistry

pytestmark = [
    pytest.mark.usefixtures("empty_consumer_pool"),
    pytest.mark.skipif(core() is None, reason="the compiled core is not installed (NATIVE=0)"),
]


def _framed(schema_id: int, schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    body = io.BytesIO()
    fastavro.schemaless_writer(body, fastavro.parse_schema(schema), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + body.getvalue()


def _rows(reader: str, cluster: Any, registry: LocalSchemaRegistry, end: int) -> list[Any]:
    registry_url = {"schema.registry.url": registry.url}
    task = make_task(cluster, reader, ("orders", 0, 0, end), include_headers=True, **registry_url)
    column = AvroColumn(json.dumps(ORDER_V2), permissive=True)
    avro = AvroColumns(value=column, include_headers=False)
    task.settings = dataclasses.replace(task.settings, avro=avro)
    table = pa.Table.from_batches(list(read_task(task)))
    names = ("offset", "value", "valueSchemaId", "_corrupt_value")
    return sorted(zip(*(table[n].to_pylist() for n in names), strict=True))


def test_the_core_decodes_avro_values_as_it_reads_them(
    kafka_clusters: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    east = kafka_clusters("east")["east"]
    east.create_topic("orders", partitions=1)
    with LocalSchemaRegistry() as registry:
        v1 = registry.register("orders-value", json.dumps(ORDER_V1))
        v2 = registry.register("orders-value", json.dumps(ORDER_V2))
        good = [_framed(v1, ORDER_V1, {"id": i, "item": f"i{i}"}) for i in range(3)]
        good += [_framed(v2, ORDER_V2, {"id": i, "item": f"i{i}", "qty": i}) for i in range(3, 5)]
        bad = [good[0][:-2], _framed(v2 + 50, ORDER_V1, {"id": 9, "item": "x"}), None]
        east.produce("orders", [(None, v) for v in good + bad], partition=0)
        end = len(good) + len(bad)

        python = _rows("python", east, registry, end)
        asked: list[int] = []
        decode_arrow = NativeDecoder.decode_arrow

        def counted(self: NativeDecoder, *args: Any) -> Any:
            asked.append(1)
            return decode_arrow(self, *args)

        monkeypatch.setattr(NativeDecoder, "decode_arrow", counted)
        first = _rows("native", east, registry, end)
        again = _rows("native", east, registry, end)  # the worker's decoder holds both schemas
    assert first == again == python
    assert [v for _, v, _, _ in python[:5]] == [
        {"id": i, "item": f"i{i}", "qty": 1 if i < 3 else i} for i in range(5)
    ]
    assert [(i, c is not None) for _, _, i, c in python[5:]] == [
        (None, True),
        (None, True),
        (None, False),
    ]
    assert asked == []  # every batch was decoded by the core's reader, not asked of it again
