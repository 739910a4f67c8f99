"""Checks of the metadata document's fields, each reporting problems with their path.

The building blocks of :mod:`pyspark_dynamic_kafka.metadata.document`: a problem list, how keys
and values are shown in messages (never a secret's value), and the parsers of cluster
properties, topics and starting positions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

from pyspark_dynamic_kafka.kafka.config import is_secret_key
from pyspark_dynamic_kafka.kafka.java_properties import translate
from pyspark_dynamic_kafka.kafka.references import is_reference, reference_problem
from pyspark_dynamic_kafka.metadata.model import StartingPosition
from pyspark_dynamic_kafka.optionspec import did_you_mean
from pyspark_dynamic_kafka.registry.endpoint import registry_problems

__all__ = [
    "MAX_INT64",
    "Problems",
    "check_id",
    "child_path",
    "collect_secrets",
    "parse_clusters",
    "parse_properties",
    "parse_starting",
    "parse_topics",
    "render_value",
    "safe_str",
    "scalar_text",
    "secrets_in_text",
    "suggestion",
    "type_name",
]

_BOOTSTRAP = "bootstrap.servers"
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*\Z")
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}\Z")
# ``key: value`` / ``"key": "value"`` pairs in raw text, to redact secrets from syntax errors.
# A key starts where a run of key characters starts (the lookbehind), so a long run without a
# colon is scanned once, not once per character (which took quadratic time). A value stops at a
# bracket, so `east: {sasl.password: x}` yields the pair inside the braces.
_PAIR = re.compile(
    r"""(?<![A-Za-z0-9_.\-])["']?([A-Za-z0-9_.\-]+)["']?\s*:\s*"""
    r"""("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^,{}\[\]\n#]+)"""
)
_MAX_SHOWN = 80
#: The largest timestamp Kafka can hold (a signed 64-bit integer).
MAX_INT64 = 2**63 - 1
# Python refuses to write an int of more than 4,300 digits as text (sys.int_info); ints this long
# (in bits) are shown by their size instead.
_MAX_TEXT_BITS = 14_000


class Problems:
    """Collects ``path: message`` problems in document order."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{path or '(top level)'}: {message}")


def safe_str(value: object) -> str:
    """``str(value)``, except for an integer too long to write as text (described instead)."""
    if isinstance(value, int) and value.bit_length() > _MAX_TEXT_BITS:
        return f"<an integer of {value.bit_length()} bits>"
    return str(value)


def child_path(parent: str, key: object) -> str:
    text = key if isinstance(key, str) else safe_str(key)
    if _PLAIN_KEY.match(text):
        return f"{parent}.{text}" if parent else text
    return f"{parent}[{json.dumps(text)}]"


def type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer" if value.bit_length() <= _MAX_TEXT_BITS else "an integer too large"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return f"a value of type {type(value).__name__}"


def render_value(value: object, secret: bool = False) -> str:
    """Describe ``value`` for a message: its kind, plus the value itself for plain scalars."""
    kind = type_name(value)
    if secret or value is None or value == "" or not isinstance(value, str | int | float):
        return kind
    if isinstance(value, int) and value.bit_length() > _MAX_TEXT_BITS:
        return kind
    text = repr(value) if isinstance(value, str) else json.dumps(value)
    if len(text) > _MAX_SHOWN:
        text = text[: _MAX_SHOWN - 3] + "..."
    return f"{kind} {text}"


def suggestion(key: object, allowed: Iterable[str]) -> str:
    """`` Did you mean '<closest allowed key>'?``, or ``""`` when none is close."""
    return did_you_mean(safe_str(key), allowed)


def scalar_text(value: object) -> str | None:
    """Return a property value as a string, or ``None`` when it is not a scalar (or an integer
    too large to write as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and value.bit_length() > _MAX_TEXT_BITS:
        return None
    if isinstance(value, str | int | float):
        return str(value)
    return None


def collect_secrets(value: object, out: set[str]) -> None:
    """Collect the scalar values stored directly under a secret key, anywhere in ``value``.

    Iterative, and each container is visited once: a decoded YAML document may nest deeper than
    Python's recursion limit, or contain itself (an alias of its own anchor).
    """
    pending: list[object] = [value]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if not isinstance(current, Mapping | list | tuple) or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, list | tuple):
            pending.extend(current)
            continue
        for key, item in current.items():
            if isinstance(key, str) and is_secret_key(key):
                text = scalar_text(item)
                if text is not None and not is_reference(text):  # a reference is shown
                    out.add(text)
                    out.add(str(item))
            else:
                pending.append(item)


def secrets_in_text(text: str) -> set[str]:
    """The values of ``secret-key: value`` pairs in raw YAML or JSON text (to redact them from
    messages about text that could not be decoded)."""
    secrets: set[str] = set()
    for match in _PAIR.finditer(text):
        key, value = match.group(1), match.group(2).strip()
        if not is_secret_key(key):
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        if not is_reference(value):
            secrets.add(value)
    return secrets


def check_id(key: object, path: str, what: str, problems: Problems) -> bool:
    if not isinstance(key, str):
        problems.add(
            path,
            f"a {what} must be a string, got {render_value(key)}; quote it in the file "
            f"(e.g. '{safe_str(key)}').",
        )
        return False
    if not key.strip():
        problems.add(path, f"a {what} must not be empty or blank; give it a name.")
        return False
    if key != key.strip():
        problems.add(path, f"{what} {key!r} has leading or trailing spaces; remove them.")
        return False
    return True


def parse_properties(value: object, path: str, problems: Problems) -> dict[str, str] | None:
    if not isinstance(value, Mapping):
        problems.add(
            path,
            f"must be a mapping of client properties (at least '{_BOOTSTRAP}: host:port'), "
            f"got {render_value(value)}.",
        )
        return None
    result: dict[str, str] = {}
    valid = True
    for key, item in value.items():
        key_path = child_path(path, key)
        if not isinstance(key, str) or not key.strip():
            problems.add(
                key_path,
                f"a client property name must be a non-empty string, got {render_value(key)}.",
            )
            valid = False
            continue
        text = scalar_text(item)
        if text is None:
            problems.add(
                key_path,
                "a client property value must be a string, number or boolean, got "
                f"{render_value(item, secret=is_secret_key(key))}; write it as a single value "
                "(quote it if needed).",
            )
            valid = False
            continue
        result[key] = text
        reference = reference_problem(text)
        if reference is not None:
            problems.add(key_path, f"the secret reference {reference}.")
            valid = False
    for key, message in registry_problems(result):
        problems.add(child_path(path, key), f"{message}.")
        valid = False
    for key, advice in translate(result).problems:
        problems.add(
            child_path(path, key),
            f"a Java client property with no librdkafka equivalent: {advice}.",
        )
        valid = False
    if _BOOTSTRAP not in value:
        near = [k for k in result if suggestion(k, [_BOOTSTRAP])]
        hint = f" {near[0]!r} is set: did you mean '{_BOOTSTRAP}'?" if near else ""
        problems.add(
            path,
            f"missing required property '{_BOOTSTRAP}'; add '{_BOOTSTRAP}: host:port[,host:port]' "
            f"for this cluster.{hint}",
        )
        valid = False
    elif _BOOTSTRAP in result and not isinstance(value[_BOOTSTRAP], str):
        problems.add(
            child_path(path, _BOOTSTRAP),
            f"must be a string (the cluster's host:port[,host:port] list), got "
            f"{render_value(value[_BOOTSTRAP])}.",
        )
        valid = False
    elif _BOOTSTRAP in result and not result[_BOOTSTRAP].strip():
        problems.add(
            child_path(path, _BOOTSTRAP),
            "must not be empty; set it to the cluster's host:port[,host:port] list.",
        )
        valid = False
    return result if valid else None


def parse_clusters(
    value: object, problems: Problems
) -> tuple[dict[str, dict[str, str] | None], bool]:
    """Return cluster id to properties (``None`` when invalid) and whether ids can be checked."""
    if not isinstance(value, Mapping):
        problems.add(
            "clusters",
            f"must be a mapping of cluster id to client properties, got {render_value(value)}.",
        )
        return {}, False
    result: dict[str, dict[str, str] | None] = {}
    for cluster_id, properties in value.items():
        path = child_path("clusters", cluster_id)
        valid_id = check_id(cluster_id, path, "cluster id", problems)
        parsed = parse_properties(properties, path, problems)
        if valid_id:
            result[str(cluster_id)] = parsed
    return result, True


def parse_topics(value: object, path: str, problems: Problems) -> set[str] | None:
    if isinstance(value, str):
        problems.add(
            path,
            f"must be a list of topic names, got {render_value(value)}; write it as [{value}].",
        )
        return None
    if not isinstance(value, list | tuple):
        problems.add(path, f"must be a list of topic names, got {render_value(value)}.")
        return None
    topics: set[str] = set()
    valid = True
    for index, topic in enumerate(value):
        topic_path = f"{path}[{index}]"
        if not isinstance(topic, str) or not topic:
            problems.add(
                topic_path, f"a topic name must be a non-empty string, got {render_value(topic)}."
            )
            valid = False
        elif not _TOPIC_NAME.match(topic) or topic in (".", ".."):
            problems.add(
                topic_path,
                f"invalid topic name {topic!r}: Kafka topic names use only letters, digits, "
                "'.', '_' and '-' (at most 249 characters); fix the name.",
            )
            valid = False
        else:
            topics.add(topic)
    return topics if valid else None


def parse_starting(value: object, path: str, problems: Problems) -> StartingPosition | None:
    expected = "must be 'earliest', 'latest' or a mapping {timestamp: <epoch milliseconds>}"
    if value in ("earliest", "latest"):
        return StartingPosition("earliest" if value == "earliest" else "latest")
    if isinstance(value, Mapping):
        keys = list(value)
        if keys != ["timestamp"]:
            shown = ", ".join(repr(safe_str(k)) for k in keys) or "none"
            problems.add(path, f"{expected}; got a mapping with key(s) {shown}.")
            return None
        timestamp = value["timestamp"]
        if (
            isinstance(timestamp, bool)
            or not isinstance(timestamp, int)
            or not 0 <= timestamp <= MAX_INT64
        ):
            problems.add(
                child_path(path, "timestamp"),
                "must be a non-negative integer (epoch milliseconds, at most 2^63-1), got "
                f"{render_value(timestamp)}.",
            )
            return None
        return StartingPosition("timestamp", timestamp)
    hint = suggestion(value, ["earliest", "latest"]) if isinstance(value, str) else ""
    problems.add(path, f"{expected}; got {render_value(value)}.{hint}")
    return None
