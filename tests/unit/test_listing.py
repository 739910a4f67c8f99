"""Client settings reaching the consumers (resolving positions: test_positions.py)."""

from __future__ import annotations

from tests.unit.conftest import BASE

from pyspark_dynamic_kafka.kafka.pool import consumer_config
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.task_packing import task_properties


def test_isolation_level_and_group_id_reach_the_consumers() -> None:
    options = parse_options({**BASE, "kafka.isolation.level": "read_committed"})
    merged = {**options.kafka_properties, "bootstrap.servers": "h:1"}
    props = task_properties({"east": merged}, "spark-dynamic-kafka-1")["east"]
    config = consumer_config(props)
    assert config["isolation.level"] == "read_committed"
    assert config["group.id"] == "spark-dynamic-kafka-1"
    assert config["enable.auto.commit"] == "false"
    assert consumer_config({"bootstrap.servers": "h:1"})["isolation.level"] == "read_uncommitted"
