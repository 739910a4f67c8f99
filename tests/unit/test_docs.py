"""The README documents every option, of the source and of each metadata service, as declared."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyspark_dynamic_kafka.kafka.java_properties import translate
from pyspark_dynamic_kafka.metadata.document import validate_metadata_document
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


def _section_showing(example: str, marker: str, heading: str) -> str:
    """The README section under ``heading``, checked to show ``examples/<example>`` from
    ``marker`` on, verbatim, in a Python block."""
    text = (README.parent / "examples" / example).read_text()
    assert marker in text
    code = text.split(f"{marker}\n", 1)[1]
    section = README.read_text().split(f"{heading}\n", 1)[1].split("\n## ", 1)[0]
    assert f"```python\n{code}```\n" in section
    return section


def test_readme_first_job_is_the_example_the_suite_runs() -> None:
    """The README's "Your first job" is examples/first_job.py from its marker on, verbatim
    (tests/integration/test_newcomer.py runs the example)."""
    _section_showing("first_job.py", "# --- README: first job ---", "## Your first job")
    # Right after the two commands: the README's first section.
    text = README.read_text()
    assert text[text.index("\n## ") :].startswith("\n## Your first job\n")


def test_readme_secure_job_is_the_example_the_suite_runs() -> None:
    """The README's secure first job ("Coming from format("kafka")") is examples/secure_job.py
    from its marker on, verbatim (tests/integration/test_newcomer.py runs the example)."""
    heading = '## Coming from `format("kafka")`'
    _section_showing("secure_job.py", "# --- README: secure job ---", heading)


def test_readme_avro_test_is_the_example_the_suite_runs() -> None:
    """The README's Avro test ("Avro from a schema registry per cluster") is
    examples/test_avro_job.py from its marker on, verbatim (tests/integration/test_newcomer.py
    runs it with pytest)."""
    heading = "## Avro from a schema registry per cluster"
    _section_showing("test_avro_job.py", "# --- README: Avro test ---", heading)


def test_readme_pipeline_is_the_example_the_suite_runs() -> None:
    """The README's pipeline ("Declarative Pipelines") is the definitions of examples/pipeline/
    from their marker on, verbatim (make test-pipeline runs the example)."""
    example = "pipeline/transformations/orders.py"
    section = _section_showing(example, "# --- README: pipeline ---", "## Declarative Pipelines")
    assert "(examples/pipeline/)" in section


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lowercased, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def test_readme_table_of_contents_links_every_section_in_order() -> None:
    text = README.read_text()
    outside_code = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    headings = re.findall(r"^(##|###) (.+)$", outside_code, flags=re.MULTILINE)
    expected = [
        ("  " if level == "###" else "") + f"- [{title}](#{_anchor(title)})"
        for level, title in headings
    ]
    contents = text.split("Contents:\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert contents == expected
    # every link to a section of the README names a heading's anchor
    anchors = {_anchor(title) for _, title in headings}
    assert sorted(set(re.findall(r"\]\(#([^)]+)\)", text)) - anchors) == []


def test_readme_coming_from_kafka_metadata_validates_and_translates() -> None:
    """The metadata of "Coming from format("kafka")", written as the Java client had it, is
    valid and its Java client properties translate (the password stays a reference)."""
    section = README.read_text().split('## Coming from `format("kafka")`\n', 1)[1]
    document = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert validate_metadata_document(document, "README") == []
    translation = translate(document["clusters"]["east"])
    assert translation.problems == ()
    assert translation.properties["sasl.password"] == (
        "${file:/etc/kafka/secrets.properties:east.password}"
    )
    assert translation.properties["ssl.ca.location"] == "/etc/kafka/ca.pem"
