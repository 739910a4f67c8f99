"""Property-based tests of the source options (``parse_options`` and its rules) and of the
built-in metadata services' ``metadataService.*`` options.

For any option map: ``SourceOptions`` or an ``OptionsError`` naming an option it was given (or
the one it lacks); never another exception; never the value of a secret (``kafka.sasl.*``,
``metadataService.token``). Valid values round-trip: the parsed settings hold what was written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.fuzz_support import (
    SECRETS,
    TOKEN,
    assert_no_secret,
    integers,
    json_values,
    short_text,
)

from pyspark_dynamic_kafka.errors import MetadataError, OptionsError
from pyspark_dynamic_kafka.metadata.factory import create_metadata_service
from pyspark_dynamic_kafka.source.config.options import OPTIONS, parse_options

_INTEGER_TEXT = integers.map(lambda n: str(n) if n.bit_length() < 14_000 else "9" * 5000)
_JSON_TEXT = json_values(6).map(lambda v: _json(v))
values = st.one_of(
    st.sampled_from(["true", "FALSE", "earliest", "latest", "error", "15m", "500 ms", "1h", ""]),
    st.sampled_from(["orders,payments", " , ", "^orders", "(", "a{99999999999999999999}"]),
    st.sampled_from(["(" * 2000 + ")" * 2000, "[" * 2000, '{"east": {"t": {"0": 5}}}']),
    _INTEGER_TEXT,
    _JSON_TEXT,
    short_text,
    st.text(max_size=20),
)


def _json(value: object) -> str:
    try:
        return json.dumps(value)
    except ValueError:  # an int too long to write
        return "{" + "1" * 5000 + "}"


def _case(key: str, draw: st.DrawFn) -> str:
    """``key`` with each letter's case drawn (Spark hands keys lowercased; users write any)."""
    mask = draw(st.integers(0, 2**64 - 1))
    return "".join(c.upper() if mask >> (i % 64) & 1 else c.lower() for i, c in enumerate(key))


@st.composite
def option_maps(draw: st.DrawFn) -> dict[str, str]:
    """Spark's option map: declared keys (any case), kafka.* and metadataService.* keys (secrets
    among them), unknown keys; values anything, often nearly right."""
    result: dict[str, str] = {}
    if draw(st.integers(0, 9)):
        result["metadataService"] = draw(st.sampled_from(["file", "http", "x"]) | values)
    if draw(st.integers(0, 4)):
        result[draw(st.sampled_from(["streamIds", "streamPattern"]))] = draw(values)
    for key in draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=5)):
        result[_case(key, draw) if draw(st.booleans()) else key.lower()] = draw(values)
    for key in draw(st.lists(st.sampled_from(sorted(SECRETS)), max_size=2)):
        prefix = draw(st.sampled_from(["kafka.", "metadataService.", "", "KAFKA."]))
        result[prefix + key] = SECRETS[key]
    if draw(st.booleans()):
        result["metadataService.token"] = TOKEN
    extra = st.one_of(
        st.sampled_from(["kafka.auto.offset.reset", "kafka.group.id", "kafka.isolation.level"]),
        st.builds(lambda k: "kafka." + k, short_text),
        st.builds(lambda k: "metadataService." + k, short_text),
        short_text,
    )
    for key in draw(st.lists(extra, max_size=2)):
        result[key] = draw(values)
    return result


_ALWAYS_NAMED = ("metadataService", "streamIds", "streamPattern")


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")  # re, on "[["
@given(options=option_maps(), mode=st.sampled_from(["stream", "batch", "any"]))
def test_any_options_parse_or_fail_naming_an_option(options: dict[str, str], mode: Any) -> None:
    try:
        settings = parse_options(options, mode)
    except OptionsError as error:
        message = str(error)
        assert_no_secret(message)
        names = {*options, *(spec.key for spec in OPTIONS.values()), *_ALWAYS_NAMED}
        assert any(f"'{name}'" in message for name in names), message
    else:
        assert_no_secret(repr(settings))
        assert settings.metadata_service


@given(
    kind=st.sampled_from(["file", "http", "singleCluster", "FILE", " Http "]),
    options=st.dictionaries(
        st.sampled_from(["path", "url", "token", "timeoutms", "cafile", "bootstrap.servers"])
        | short_text,
        values,
        max_size=4,
    ),
    secret=st.sampled_from([*sorted(SECRETS), None]),
)
def test_any_service_options_build_a_service_or_fail_naming_an_option(
    kind: str, options: dict[str, str], secret: str | None
) -> None:
    options = {**options, "token": TOKEN} if "token" in options else options
    if secret is not None:
        options[secret] = SECRETS[secret]
    try:
        service = create_metadata_service(kind, options)
    except (OptionsError, MetadataError) as error:
        message = str(error)
        assert_no_secret(message)
        assert "metadataService" in message, message
    else:
        assert_no_secret(repr(service))
        service.close()


_POSITIVE = ("maxOffsetsPerTrigger", "minPartitions", "maxRecordsPerPartition")


@given(
    numbers=st.fixed_dictionaries({key: st.integers(1, 2**63 - 1) for key in _POSITIVE}),
    interval=st.integers(-(2**40), 2**40),
    threshold=st.integers(0, 1000),
    flags=st.tuples(st.booleans(), st.booleans()),
    delay=st.tuples(st.integers(0, 10**6), st.sampled_from(["ms", "s", "m", "h", "d", ""])),
    ids=st.lists(st.text("abcxyz-_.", min_size=1, max_size=5), min_size=1, max_size=4),
    data=st.data(),
)
def test_valid_options_round_trip(
    numbers: dict[str, int],
    interval: int,
    threshold: int,
    flags: tuple[bool, bool],
    delay: tuple[int, str],
    ids: list[str],
    data: st.DataObject,
) -> None:
    units = {"ms": 1, "": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    written = {
        "metadataService": "file",
        "streamIds": " , ".join(ids),
        "metadataDiscoveryIntervalMs": f" {interval} ",
        "metadataDiscoveryFailureThreshold": str(threshold),
        "failOnDataLoss": str(flags[0]).upper(),
        "includeHeaders": str(flags[1]).lower(),
        "maxTriggerDelay": f"{delay[0]}{delay[1]}",
        **{key: str(value) for key, value in numbers.items()},
    }
    options = {_case(k, data.draw): v for k, v in written.items()}
    settings = parse_options(options, "stream")
    assert settings.stream_ids == tuple(dict.fromkeys(ids))
    assert settings.discovery_interval_ms == interval
    assert settings.discovery_failure_threshold == threshold
    assert (settings.fail_on_data_loss, settings.include_headers) == flags
    assert settings.max_trigger_delay_ms == delay[0] * units[delay[1]]
    assert settings.max_offsets_per_trigger == numbers["maxOffsetsPerTrigger"]
    assert settings.min_partitions == numbers["minPartitions"]
    assert settings.max_records_per_partition == numbers["maxRecordsPerPartition"]
