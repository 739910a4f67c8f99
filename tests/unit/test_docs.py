"""The README documents every option, of the source and of each metadata service, as declared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyspark_dynamic_kafka.metadata.file import OPTIONS as FILE_OPTIONS
from pyspark_dynamic_kafka.metadata.http import OPTIONS as HTTP_OPTIONS
from pyspark_dynamic_kafka.metadata.single_cluster import OPTIONS as SINGLE_CLUSTER_OPTIONS
from pyspark_dynamic_kafka.optionspec import METADATA_SERVICE, OptionSet, OptionSpec
from pyspark_dynamic_kafka.sink.config.options import SINK_OPTIONS
from pyspark_dynamic_kafka.source.config.options import OPTIONS

README = Path(__file__).resolve().parents[2] / "README.md"


def _rows() -> dict[str, str]:
    """Option -> its row in a README options table."""
    return {
        line.split("|")[1].strip().strip("`"): line
        for line in README.read_text().splitlines()
        if line.startswith("| `")
    }


def _check_row(name: str, spec: OptionSpec[Any], row: str) -> None:
    for default in (spec.default, spec.batch_default):
        if default is not None:
            assert f"`{default}`" in row, f"README row of {name} lacks its default {default}"
    if spec.required:
        assert "(required)" in row, f"README row of {name} does not say it is required"
    if spec.scope == "batch":
        assert "batch only" in row, f"README row of {name} does not say it is for batch only"
    if spec.scope == "stream":
        assert "streams" in row, f"README row of {name} does not say it is for streams"


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    head = text[: text.index("## ")]
    assert "make demo" in head and "make test" in head


def test_every_option_has_a_row_with_its_default() -> None:
    rows = _rows()
    for key, spec in OPTIONS.items():
        assert key in rows, f"README options table lacks {key}"
        _check_row(key, spec, rows[key])


def test_every_sink_option_has_a_row_with_its_default() -> None:
    rows = _rows()
    for key, spec in SINK_OPTIONS.specs.items():
        if key != METADATA_SERVICE:  # the source's row
            assert key in rows, f"README sink options table lacks {key}"
            _check_row(key, spec, rows[key])


@pytest.mark.parametrize(
    "options", [FILE_OPTIONS, HTTP_OPTIONS, SINGLE_CLUSTER_OPTIONS], ids=["file", "http", "single"]
)
def test_every_metadata_service_option_is_documented(options: OptionSet) -> None:
    text, rows = README.read_text(), _rows()
    for key, spec in options.specs.items():
        name = options.name(key)
        assert f"`{name}`" in text, f"README does not mention {name}"
        if name in rows:
            _check_row(name, spec, rows[name])
        elif spec.default is not None:
            paragraph = next(p for p in text.split("\n\n") if f"`{name}`" in p)
            assert f"`{spec.default}`" in paragraph, f"README lacks the default of {name}"


def test_readme_first_job_is_the_example_the_suite_runs() -> None:
    """The README's "Your first job" is examples/first_job.py from its marker on, verbatim
    (tests/integration/test_newcomer.py runs the example)."""
    example = (README.parent / "examples" / "first_job.py").read_text()
    marker = "# --- README: first job ---\n"
    assert marker in example
    code = example.split(marker, 1)[1]
    text = README.read_text()
    section = text.split("## Your first job\n", 1)[1].split("\n## ", 1)[0]
    assert f"```python\n{code}```\n" in section
    # Right after the two commands: the README's first section.
    assert text[text.index("\n## ") :].startswith("\n## Your first job\n")
