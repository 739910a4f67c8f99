"""Property-based tests of metadata documents, decoded values and YAML/JSON files.

For any input: the result is a validated ``ParsedMetadata`` or a ``MetadataError`` (never an
exception of a library or of Python itself) whose message names the file and, for content
problems, the path inside the document, and never holds a secret. Valid documents round-trip:
document -> model -> document, and model -> file -> model in both formats.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from tests.unit.fuzz_documents import broken_values, corrupt, normalized, valid_documents
from tests.unit.fuzz_support import (
    assert_no_secret,
    deep_nesting,
    mutated,
    secrets_still_secret,
)

from pyspark_dynamic_kafka import metadata
from pyspark_dynamic_kafka.errors import MetadataError, MetadataValidationError

SOURCE = "fuzz/streams.yaml"
# A problem starts with its path: "(top level)", "clusters...", "streams..." or an unknown
# top-level key (plain, or quoted in brackets).
_PATH = re.compile(r'(\(top level\)|clusters|streams|\["|[A-Za-z0-9_][A-Za-z0-9_-]*: unknown top)')
_counter = itertools.count()


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for the files of every example of this module."""
    return tmp_path_factory.mktemp("fuzz-metadata")


def _check_problems(error: MetadataValidationError) -> None:
    assert error.problems, f"no problem listed: {error}"
    for problem in error.problems:
        assert _PATH.match(problem), f"problem without its path: {problem!r}"
        assert_no_secret(problem)
    assert SOURCE in str(error)
    assert_no_secret(str(error))


@given(document=valid_documents(), data=st.data())
def test_any_decoded_document_is_parsed_or_refused_with_paths(
    document: dict[str, Any], data: st.DataObject
) -> None:
    broken = corrupt(document, data)
    try:
        parsed = metadata.parse_metadata_document(broken, SOURCE)
    except MetadataValidationError as error:
        _check_problems(error)
        assert metadata.validate_metadata_document(broken, SOURCE) == list(error.problems)
    else:
        assert isinstance(parsed, metadata.ParsedMetadata)
        assert metadata.validate_metadata_document(broken, SOURCE) == []
        assert_no_secret(repr(parsed))


@given(document=st.one_of(broken_values, st.none()))
def test_any_value_is_parsed_or_refused_with_paths(document: object) -> None:
    with pytest.raises(MetadataValidationError) as caught:
        metadata.parse_metadata_document(document, SOURCE)
    _check_problems(caught.value)


def _file(directory: Path, suffix: str) -> Path:
    return directory / f"m{next(_counter)}{suffix}"


@given(document=valid_documents(), suffix=st.sampled_from([".yaml", ".yml", ".json"]))
def test_valid_documents_round_trip(files: Path, document: dict[str, Any], suffix: str) -> None:
    # document -> model -> document
    parsed = metadata.parse_metadata_document(document, SOURCE)
    dumped = metadata.dump_metadata_document(parsed)
    assert dumped == normalized(document)
    assert metadata.parse_metadata_document(dumped, SOURCE) == parsed
    assert_no_secret(repr(parsed))
    # model -> file -> model
    path = _file(files, suffix)
    metadata.write_metadata_file(path, parsed)
    assert metadata.load_metadata_file(path) == parsed
    assert metadata.validate_metadata_file(path) == []
    path.unlink()


_YAML_TOKENS = [
    "clusters:", "streams:", "\n", "  ", "- ", ": ", "? ", "&a ", "*a", "&b ", "*b", "<<: ",
    "!!binary ", "!!set ", "!!timestamp ", "!!int ", "!!float ", "!!str ", "!!python/tuple ",
    "!custom ", "2020-13-01", "2001-12-14t21:59:43.10-05:00", "1" * 4400, "0x1F", "1_0", ".inf",
    "[", "]", "{", "}", ",", "'", '"', "#", "|", ">", "%YAML 1.1\n", "---\n", "...\n", "\t",
    "\ufeff", "\x00", "\\u00", "bootstrap.servers: h:1", "cluster: east", "topics: [t]",
    "startingOffsets: {timestamp: 5}", "sasl.password: SENTINEL-sasl-password-5b1f0c",
]  # fmt: skip
_JSON_TOKENS = [
    "{", "}", "[", "]", ",", ":", '"clusters"', '"streams"', '"east"', '"cluster"', '"topics"',
    '"bootstrap.servers"', '"h:1"', "1" * 4400, "1e999", "-0", "NaN", "Infinity", "null",
    "true", '"\\ud800"', '"\\u00"', "\x00", " ", "\n", '"sasl.password"',
    '"SENTINEL-sasl-password-5b1f0c"',
]  # fmt: skip


@st.composite
def metadata_texts(draw: st.DrawFn) -> tuple[str, bytes]:
    """(suffix, file content): a dumped document, broken and edited, or a soup of tokens."""
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    tokens = _YAML_TOKENS if suffix == ".yaml" else _JSON_TOKENS
    how = draw(st.sampled_from(["dumped", "soup", "nested", "bytes"]))
    if how == "soup":
        text = "".join(draw(st.lists(st.sampled_from(tokens), max_size=30)))
    elif how == "nested":
        text = draw(deep_nesting()) if suffix == ".json" else draw(_deep_yaml())
    elif how == "bytes":
        return suffix, draw(st.binary(max_size=40))
    else:
        document = corrupt(draw(valid_documents()), draw(st.data()), rate=12)
        try:
            text = (
                json.dumps(document, default=str)
                if suffix == ".json"
                else yaml.safe_dump(document, allow_unicode=True)
            )
        except (TypeError, ValueError, RecursionError, yaml.YAMLError):
            text = _garbage(document)
        text = mutated(text, draw(st.data()), "".join(tokens[:40]))
    return suffix, text.encode("utf-8", errors="surrogatepass")


def _garbage(document: object) -> str:
    """The repr of a value neither JSON nor YAML can write, as garbage text."""
    try:
        return repr(document)[:2000]
    except ValueError:  # an int too long to write: no repr either
        return "{[:"


def _deep_yaml() -> st.SearchStrategy[str]:
    return st.builds(
        lambda depth, opener: opener * depth,
        st.sampled_from([100, 1100]),
        st.sampled_from(["[", "- ", "a: {", "&x [*x, "]),
    )


@given(content=metadata_texts())
def test_any_file_is_loaded_or_refused_naming_the_file(
    files: Path, content: tuple[str, bytes]
) -> None:
    suffix, raw = content
    path = _file(files, suffix)
    path.write_bytes(raw)
    text = raw.decode("utf-8", errors="replace")
    try:
        parsed = metadata.load_metadata_file(path)
    except MetadataError as error:
        message = str(error)
        assert str(path) in message, message
        if isinstance(error, MetadataValidationError) and error.problems:
            assert all(_PATH.match(p) for p in error.problems), error.problems
        if secrets_still_secret(text):
            assert_no_secret(message)
        problems = metadata.validate_metadata_file(path)
        assert problems, "validate_metadata_file found nothing in a file load refused"
    else:
        assert isinstance(parsed, metadata.ParsedMetadata)
        assert metadata.validate_metadata_file(path) == []
        assert_no_secret(repr(parsed))
    path.unlink()
