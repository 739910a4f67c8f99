"""The driver's one decision of the engine that reads a cluster (``direct``, ``librdkafka`` or
``python``: engines/choice.py), without a broker; the writer's:
tests/unit/test_sink_writer_choice.py.

The compiled core is real here (installed by ``make setup``): it answers whether it can make a
client of the properties and whether its direct fetch path serves them.
"""

from __future__ import annotations

import logging

import pytest

from pyspark_dynamic_kafka.engines.choice import Engine, read_engine, read_engines
from pyspark_dynamic_kafka.engines.core import core
from pyspark_dynamic_kafka.errors import OptionsError
from pyspark_dynamic_kafka.kafka.config import FrozenProperties
from pyspark_dynamic_kafka.source.config.options import parse_options
from pyspark_dynamic_kafka.source.driver.task_packing import pack_query_tasks
from pyspark_dynamic_kafka.source.executor.task import OffsetRange

needs_core = pytest.mark.skipif(core() is None, reason="the compiled core is not installed")

PLAIN = {"bootstrap.servers": "127.0.0.1:9092"}
KERBEROS = {**PLAIN, "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}
RACK = {**PLAIN, "client.rack": "dc1"}
FOLLOWER = "client.rack is set (follower fetching)"


def test_reader_option_defaults_to_auto_and_names_bad_values() -> None:
    options = {"metadataService": "singleCluster", "metadataService.bootstrapServers": "h:1"}
    assert parse_options({**options, "streamIds": "s"}).reader == "auto"
    assert parse_options({**options, "streamIds": "s", "reader": "Native"}).reader == "native"
    with pytest.raises(OptionsError, match=r"reader.*'fast'|'fast'.*reader"):
        parse_options({**options, "streamIds": "s", "reader": "fast"})


def test_python_reader_reads_every_cluster_in_python(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        engines = read_engines("python", {"python-east": PLAIN, "python-west": KERBEROS})
    assert engines == {
        "python-east": Engine("python", "reader=python"),
        "python-west": Engine("python", "reader=python"),
    }
    assert [r.getMessage() for r in caplog.records if "python-" in r.getMessage()] == [
        f"reader=python: cluster '{c}' is read with the Python reader"
        for c in ("python-east", "python-west")
    ]


@needs_core
def test_auto_picks_the_fastest_engine_of_each_cluster_and_logs_the_rest_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Cluster ids of this test alone: each line is logged once per process and cluster, and
    # other tests of this process read clusters named east.
    clusters = {"auto-east": PLAIN, "auto-rack-west": RACK, "auto-kerberos-west": KERBEROS}
    with caplog.at_level(logging.INFO):
        engines = read_engines("auto", clusters)
        assert read_engines("auto", clusters) == engines
    assert {c: e.name for c, e in engines.items()} == {
        "auto-east": "direct",
        "auto-rack-west": "librdkafka",
        "auto-kerberos-west": "python",
    }
    assert engines["auto-east"].reason is None and engines["auto-rack-west"].reason == FOLLOWER
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reader=")]
    assert lines == [  # one per cluster, in id order, naming the reader and its path
        "reader=auto: cluster 'auto-east' is read with the compiled core's direct fetch path (its "
        "own Fetch requests)",
        "reader=auto: cluster 'auto-kerberos-west' is read with the Python reader: SASL GSSAPI "
        "(Kerberos) needs Cyrus SASL, which the compiled core does not link",
        "reader=auto: cluster 'auto-rack-west' is read with librdkafka's consumer, not the direct "
        f"fetch path: {FOLLOWER}",
    ]


@needs_core
def test_native_fails_at_query_start_naming_the_cluster_and_reason() -> None:
    with pytest.raises(OptionsError) as failed:
        read_engines("native", {"east": PLAIN, "west": KERBEROS})
    assert "cluster 'west' cannot be read natively" in str(failed.value)
    assert "GSSAPI" in str(failed.value) and "reader=auto" in str(failed.value)


@needs_core
def test_native_reads_with_librdkafka_where_the_direct_path_does_not_serve() -> None:
    assert read_engine("native", "west", RACK) == Engine("librdkafka", FOLLOWER)
    assert read_engine("native", "east", PLAIN) == Engine("direct")


@needs_core
def test_properties_librdkafka_refuses_are_named_without_secrets() -> None:
    secret = {**PLAIN, "sasl.password": "hunter2", "fetch.wait.max.ms": "soon"}
    engine = read_engine("auto", "east", secret)
    assert engine.name == "python" and engine.reason is not None
    assert "fetch.wait.max.ms" in engine.reason and "hunter2" not in engine.reason
    assert read_engine("auto", "east", {**PLAIN, "no.such.property": "1"}).name == "python"


@needs_core
def test_tasks_carry_the_engine_of_each_cluster() -> None:
    options = parse_options(
        {"metadataService": "singleCluster", "metadataService.bootstrapServers": "h:1"}
        | {"streamIds": "s"}
    )
    ranges = [OffsetRange("east", "orders", 0, 0, 10), OffsetRange("rack-west", "orders", 0, 0, 5)]
    tasks = pack_query_tasks(ranges, {"east": PLAIN, "rack-west": RACK}, options, "g")
    assert {t.settings.engines for t in tasks} == {
        FrozenProperties({"east": "direct", "rack-west": "librdkafka"})
    }
    assert {t.settings.engine("elsewhere") for t in tasks} == {"python"}


@needs_core
def test_the_core_is_asked_once_per_properties_value(monkeypatch: pytest.MonkeyPatch) -> None:
    module = core()
    assert module is not None
    asked: dict[str, int] = {"config": 0, "direct": 0}
    real_config, real_direct = module.config_problem, module.direct_problem

    def config_problem(config: object) -> str | None:
        asked["config"] += 1
        return real_config(config)  # type: ignore[no-any-return]

    def direct_problem(config: object, produce: bool = False) -> str | None:
        asked["direct"] += 1
        return real_direct(config, produce)  # type: ignore[no-any-return]

    monkeypatch.setattr(module, "config_problem", config_problem)
    monkeypatch.setattr(module, "direct_problem", direct_problem)
    unique = {**PLAIN, "client.id": f"cache-{id(asked)}"}
    for _ in range(3):  # like three micro-batches' planning
        assert read_engine("auto", "east", FrozenProperties(unique)).name == "direct"
    assert asked == {"config": 1, "direct": 1}
    refused = {**unique, "fetch.wait.max.ms": "soon"}
    assert read_engine("auto", "east", refused) == read_engine("auto", "east", refused)
    assert asked == {"config": 2, "direct": 1}
