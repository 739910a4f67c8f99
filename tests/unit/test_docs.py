"""The documentation (README.md, the landing page, and the guides in docs/) documents every option,
of the source, the sink and each metadata service, as declared; shows the examples the suite runs
verbatim; and links every guide, with links that resolve."""

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

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def _page(name: str) -> str:
    """The text of ``docs/<name>``."""
    return (DOCS / name).read_text()


def _rows(*pages: str) -> dict[str, str]:
    """Option -> its row in an options table of the given docs pages."""
    return {
        line.split("|")[1].strip().strip("`"): line
        for page in pages
        for line in _page(page).splitlines()
        if line.startswith("| `")
    }


def _check_row(name: str, spec: OptionSpec[Any], row: str) -> None:
    for default in (spec.default, spec.batch_default):
        if default is not None:
            assert f"`{default}`" in row, f"the row of {name} lacks its default {default}"
    if spec.required:
        assert "(required)" in row, f"the row of {name} does not say it is required"
    if spec.scope == "batch":
        assert "batch only" in row, f"the row of {name} does not say it is for batch only"
    if spec.scope == "stream":
        assert "streams" in row, f"the row of {name} does not say it is for streams"


def test_readme_starts_with_the_two_commands() -> None:
    """The README's head, before its first section, gives ``make demo`` and ``make test``."""
    text = README.read_text()
    head = text[: text.index("## ")]
    assert "make demo" in head and "make test" in head


def test_every_option_has_a_row_with_its_default() -> None:
    rows = _rows("options.md")
    for key, spec in OPTIONS.items():
        assert key in rows, f"docs/options.md's table lacks {key}"
        _check_row(key, spec, rows[key])


def test_every_sink_option_has_a_row_with_its_default() -> None:
    rows = _rows("sink.md")
    for key, spec in SINK_OPTIONS.specs.items():
        if key != METADATA_SERVICE:  # the source's row
            assert key in rows, f"docs/sink.md's options table lacks {key}"
            _check_row(key, spec, rows[key])


@pytest.mark.parametrize(
    "options", [FILE_OPTIONS, HTTP_OPTIONS, SINGLE_CLUSTER_OPTIONS], ids=["file", "http", "single"]
)
def test_every_metadata_service_option_is_documented(options: OptionSet) -> None:
    pages = ("options.md", "metadata.md")
    text, rows = "\n\n".join(_page(p) for p in pages), _rows(*pages)
    for key, spec in options.specs.items():
        name = options.name(key)
        assert f"`{name}`" in text, f"docs/options.md and docs/metadata.md do not mention {name}"
        if name in rows:
            _check_row(name, spec, rows[name])
        elif spec.default is not None:
            paragraph = next(p for p in text.split("\n\n") if f"`{name}`" in p)
            assert f"`{spec.default}`" in paragraph, f"the docs lack the default of {name}"


def _section(path: Path, heading: str) -> str:
    """The section of ``path`` under ``heading`` (a markdown heading line), up to the next heading
    of its level or a higher one outside code blocks (under a page's ``#`` title: the page)."""
    level = len(heading) - len(heading.lstrip("#"))
    lines, fenced = [], False
    for line in path.read_text().split(f"{heading}\n", 1)[1].splitlines(keepends=True):
        fenced ^= line.startswith("```")
        marks = len(line) - len(line.lstrip("#"))
        if not fenced and 0 < marks <= level and line[marks : marks + 1] == " ":
            break
        lines.append(line)
    return "".join(lines)


def _section_showing(example: str, marker: str, path: Path, heading: str) -> str:
    """The section of ``path`` under ``heading``, checked to show ``examples/<example>`` from
    ``marker`` on, verbatim, in a Python block."""
    text = (ROOT / "examples" / example).read_text()
    assert marker in text
    code = text.split(f"{marker}\n", 1)[1]
    section = _section(path, heading)
    assert f"```python\n{code}```\n" in section
    return section


def test_readme_first_job_is_the_example_the_suite_runs() -> None:
    """The README's "Your first job" is examples/first_job.py from its marker on, verbatim
    (tests/integration/test_newcomer.py runs the example)."""
    _section_showing("first_job.py", "# --- README: first job ---", README, "## Your first job")
    # Right after the two commands: the README's first section.
    text = README.read_text()
    assert text[text.index("\n## ") :].startswith("\n## Your first job\n")


def test_secure_job_is_the_example_the_suite_runs() -> None:
    """The secure first job of docs/coming-from-kafka.md is examples/secure_job.py from its
    marker on, verbatim (tests/integration/test_newcomer.py runs the example)."""
    marker = "# --- docs/coming-from-kafka.md: secure job ---"
    page, heading = DOCS / "coming-from-kafka.md", '# Coming from `format("kafka")`'
    _section_showing("secure_job.py", marker, page, heading)


def test_avro_test_is_the_example_the_suite_runs() -> None:
    """The Avro test of docs/avro.md ("Avro from a schema registry per cluster") is
    examples/test_avro_job.py from its marker on, verbatim (tests/integration/test_newcomer.py
    runs it with pytest)."""
    marker = "# --- docs/avro.md: Avro test ---"
    heading = "# Avro from a schema registry per cluster"
    _section_showing("test_avro_job.py", marker, DOCS / "avro.md", heading)


def test_pipeline_is_the_example_the_suite_runs() -> None:
    """The pipeline of docs/pipelines.md ("Declarative Pipelines") is the definitions of
    examples/pipeline/ from their marker on, verbatim (make test-pipeline runs the example)."""
    example = "pipeline/transformations/orders.py"
    marker = "# --- docs/pipelines.md: pipeline ---"
    page, heading = DOCS / "pipelines.md", "# Declarative Pipelines"
    section = _section_showing(example, marker, page, heading)
    assert "(../examples/pipeline/)" in section


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading: lowercased, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _outside_code(path: Path) -> str:
    """A markdown file's text without its code blocks."""
    return re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)


def _anchors(path: Path) -> set[str]:
    """The anchors of the headings of a markdown file (outside code blocks)."""
    headings = re.findall(r"^#{1,6} (.+)$", _outside_code(path), flags=re.MULTILINE)
    return {_anchor(t) for t in headings}


def _links(path: Path) -> list[str]:
    """The targets of the markdown links of a file (outside code blocks), web links left out."""
    targets = re.findall(r"\]\(([^)\s]+)\)", _outside_code(path))
    return [t for t in targets if not re.match(r"^[a-z]+:", t)]


def test_readme_links_every_docs_page() -> None:
    """The landing page links every guide of docs/ (docs/<page>.md, with or without an anchor)."""
    linked = {t.split("#", 1)[0] for t in _links(README)}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert sorted(pages - linked) == []


DOCUMENTATION = [README, *sorted(p for p in DOCS.glob("*.md") if p.name != "benchmarks.md")]


@pytest.mark.parametrize("path", DOCUMENTATION, ids=lambda p: p.name)
def test_every_link_names_a_file_and_a_heading_that_exist(path: Path) -> None:
    """Links of the README and of the guides resolve: the file exists (relative to the page), and
    an anchor names a heading of the page it points at (docs/benchmarks.md's own links are its
    author's)."""
    broken = []
    for target in _links(path):
        file, _, anchor = target.partition("#")
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists() or (anchor and anchor not in _anchors(linked)):
            broken.append(target)
    assert broken == []


def test_coming_from_kafka_metadata_validates_and_translates() -> None:
    """The metadata of docs/coming-from-kafka.md, written as the Java client had it, is valid and
    its Java client properties translate (the password stays a reference)."""
    section = _page("coming-from-kafka.md")
    document = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    assert validate_metadata_document(document, "docs/coming-from-kafka.md") == []
    translation = translate(document["clusters"]["east"])
    assert translation.problems == ()
    assert translation.properties["sasl.password"] == (
        "${file:/etc/kafka/secrets.properties:east.password}"
    )
    assert translation.properties["ssl.ca.location"] == "/etc/kafka/ca.pem"


def test_the_site_nav_lists_every_docs_page() -> None:
    """mkdocs.yml (make docs) has every docs/*.md page in its nav, and no page that is not
    there; the README is the site's home page (index.md, added by tools/mkdocs_hooks.py)."""

    class Loader(yaml.SafeLoader):
        """mkdocs.yml's ``!!python/...`` tags read as plain nodes."""

    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda *_: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)

    def pages(nav: Any) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, dict):
            return [p for value in nav.values() for p in pages(value)]
        return [p for item in nav for p in pages(item)]

    listed = pages(config["nav"])
    assert "index.md" in listed and not (DOCS / "index.md").exists()
    assert sorted(set(listed) - {"index.md"}) == sorted(p.name for p in DOCS.glob("*.md"))
