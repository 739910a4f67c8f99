"""Strategies of metadata documents: valid ones, and valid ones with parts broken at random."""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import strategies as st
from tests.unit.fuzz_support import SECRETS, json_values, scalars, short_text

from pyspark_dynamic_kafka.kafka.java_properties import translate
from pyspark_dynamic_kafka.registry.endpoint import is_registry_key

_ID_ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cs",))
#: Valid ids: non-blank, no surrounding whitespace (often short names, so they collide).
ids = st.one_of(
    st.sampled_from(["east", "west", "north", "a", "b.c", "x-y_z"]),
    st.text(_ID_ALPHABET, min_size=1, max_size=8),
).filter(lambda s: bool(s.strip()) and s == s.strip())
topic_names = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=12
).filter(lambda t: t not in (".", ".."))
startings = st.one_of(
    st.sampled_from(["earliest", "latest"]),
    st.builds(lambda t: {"timestamp": t}, st.integers(0, 2**63 - 1)),
)
#: Valid property names: not a Java client property with no librdkafka equivalent (``x.classes``,
#: ``y.deserializer``), nor a schema registry key (those are checked, and tested, apart).
property_keys = st.text(_ID_ALPHABET, min_size=1, max_size=10).filter(
    lambda k: (
        bool(k.strip())
        and k not in SECRETS
        and k != "bootstrap.servers"
        and not translate({k: "x"}).problems
        and not is_registry_key(k)
    )
)
property_values = st.one_of(
    st.text(max_size=10), st.integers(), st.booleans(), st.floats(allow_nan=False)
)


@st.composite
def properties(draw: st.DrawFn) -> dict[str, Any]:
    """A cluster's client properties: bootstrap.servers, others, and some secrets."""
    result: dict[str, Any] = {"bootstrap.servers": draw(ids)}
    result.update(draw(st.dictionaries(property_keys, property_values, max_size=3)))
    for key in draw(st.lists(st.sampled_from(sorted(SECRETS)), unique=True, max_size=3)):
        result[key] = SECRETS[key]
    return result


@st.composite
def valid_documents(draw: st.DrawFn) -> dict[str, Any]:
    """A valid metadata document (the input a file or a service gives)."""
    clusters = draw(st.dictionaries(ids, properties(), max_size=3))
    streams: dict[str, list[dict[str, Any]]] = {}
    for stream_id in draw(st.lists(ids, unique=True, max_size=3)):
        entries: list[dict[str, Any]] = []
        starting = {cid: draw(st.none() | startings) for cid in clusters}
        for _ in range(draw(st.integers(0, 3)) if clusters else 0):
            cluster = draw(st.sampled_from(sorted(clusters)))
            entry: dict[str, Any] = {
                "cluster": cluster,
                "topics": draw(st.lists(topic_names, max_size=3)),
            }
            if starting[cluster] is not None and draw(st.booleans()):
                entry["startingOffsets"] = starting[cluster]
            entries.append(entry)
        streams[stream_id] = entries
    return {"clusters": clusters, "streams": streams}


def _self_referencing(kind: str) -> object:
    """A list or mapping that contains itself (what a YAML alias of its own anchor decodes to)."""
    if kind == "list":
        items: list[object] = []
        items.append(items)
        return items
    mapping: dict[str, object] = {}
    mapping["streams"] = mapping
    return mapping


#: Values a YAML file can decode to beyond JSON's: dates, bytes, sets, non-string keys, cycles.
yaml_only_values = st.one_of(
    st.dates(),
    st.datetimes(),
    st.binary(max_size=6),
    st.frozensets(st.integers(0, 3), max_size=3),
    st.dictionaries(st.one_of(st.integers(), st.none(), st.booleans(), st.dates()), scalars),
    st.sampled_from(["list", "mapping"]).map(_self_referencing),
    st.just(datetime.time(1, 2)),
)
broken_values = st.one_of(json_values(), yaml_only_values)


def corrupt(value: Any, data: st.DataObject, rate: int = 6) -> Any:
    """``value`` with, on average, one node in ``rate`` replaced by a random value, a key
    renamed, an item dropped or added."""
    if data.draw(st.integers(0, rate - 1), label="corrupt?") == 0:
        return data.draw(broken_values, label="replacement")
    if isinstance(value, dict):
        result: dict[Any, Any] = {}
        for key, item in value.items():
            action = data.draw(st.integers(0, 3 * rate), label="key action")
            if action == 0:
                continue  # dropped
            if action == 1 and item not in SECRETS.values():  # a renamed secret is no secret
                key = data.draw(st.one_of(short_text, scalars), label="renamed key")
            result[key] = corrupt(item, data, rate)
        if data.draw(st.integers(0, rate), label="add?") == 0:
            result[data.draw(short_text, label="new key")] = data.draw(broken_values)
        return result
    if isinstance(value, list):
        items = [corrupt(item, data, rate) for item in value]
        if data.draw(st.integers(0, rate), label="add item?") == 0:
            items.append(data.draw(broken_values, label="new item"))
        return items
    return value


def normalized(document: dict[str, Any]) -> dict[str, Any]:
    """The document a valid one comes back as (dump of its parse): property values as strings,
    one entry per cluster in cluster order, topics united and sorted."""
    clusters = {
        cid: {key: _text(value) for key, value in props.items()}
        for cid, props in document["clusters"].items()
    }
    streams: dict[str, list[dict[str, Any]]] = {}
    for sid, entries in document["streams"].items():
        merged: dict[str, dict[str, Any]] = {}
        for entry in entries:
            target = merged.setdefault(
                entry["cluster"], {"cluster": entry["cluster"], "topics": []}
            )
            target["topics"] = sorted(set(target["topics"]) | set(entry["topics"]))
            if "startingOffsets" in entry:
                target["startingOffsets"] = entry["startingOffsets"]
        streams[sid] = [merged[cid] for cid in sorted(merged)]
    return {"clusters": clusters, "streams": streams}


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
