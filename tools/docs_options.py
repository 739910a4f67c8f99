"""Keep the options tables of the guides to the code's declarations.

``python -m tools.docs_options`` rewrites the tables; ``--check`` only says whether they differ
(exit status 1, with a diff). Each table is the one of its page that has a row of a declared
option (``| `name` | default | meaning |``):

- docs/options.md: the source's options (``source.config.options.OPTIONS``);
- docs/sink.md: the sink's (``sink.config.options.SINK_OPTIONS``, less ``metadataService``, the
  source's row);
- docs/metadata.md: the ``http`` metadata service's (``metadata.http.OPTIONS``; the ``file`` and
  ``singleCluster`` services' few options are prose, which tests/unit/test_docs.py checks).

From the declarations come: a row for every option (a missing one is added at the end of the
table, its meaning the declaration's ``doc``, after ``streams:`` or ``batch only:`` as its scope
says), the default column (``(required)``, or the default in backticks, with the batch default
after ``(streams),`` when it differs; an option without a default keeps the page's words, such as
``none`` or the subject it falls back to) and no row for an option that is not declared (rows of
names with ``*`` and of ``kafka.`` client properties are the page's own). The meaning column, the
row order and the rest of the page are the page's: prose written there.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pyspark_dynamic_kafka.metadata.http import OPTIONS as HTTP_OPTIONS
from pyspark_dynamic_kafka.optionspec import METADATA_SERVICE, OptionSpec
from pyspark_dynamic_kafka.sink.config.options import SINK_OPTIONS
from pyspark_dynamic_kafka.source.config.options import OPTIONS

DOCS = Path(__file__).resolve().parents[1] / "docs"

Declared = list[tuple[str, OptionSpec[Any]]]


def declared() -> dict[str, Declared]:
    """Page name -> the options its table documents, as (name, declaration), in code order."""
    return {
        "options.md": list(OPTIONS.items()),
        "sink.md": [(k, s) for k, s in SINK_OPTIONS.specs.items() if k != METADATA_SERVICE],
        "metadata.md": [(HTTP_OPTIONS.name(k), s) for k, s in HTTP_OPTIONS.specs.items()],
    }


def default_cell(spec: OptionSpec[Any], written: str) -> str:
    """The default column of an option's row.

    Parameters
    ----------
    spec:
        The option's declaration.
    written:
        The page's cell, kept when the option has no default (its words for what applies).

    Returns
    -------
    str
        The cell's text, without the surrounding spaces.
    """
    if spec.required:
        return "(required)"
    if spec.default is None:
        return written
    if spec.batch_default is not None:
        return f"`{spec.default}` (streams), `{spec.batch_default}` (batch)"
    return f"`{spec.default}`"


def _name(line: str) -> str | None:
    """The option a table row documents, or ``None`` when the line is not such a row."""
    if not line.startswith("| `"):
        return None
    return line.split("|")[1].strip().strip("`")


def _own(name: str) -> bool:
    """Whether an undeclared row is the page's own (a pattern, a Kafka client property)."""
    return "*" in name or name.startswith("kafka.")


def _new_row(name: str, spec: OptionSpec[Any]) -> str:
    scope = {"stream": "streams: ", "batch": "batch only: "}.get(spec.scope, "")
    return f"| `{name}` | {default_cell(spec, '')} | {scope}{spec.doc} |".replace("|  |", "| |")


def render(text: str, options: Declared) -> str:
    """The page ``text`` with its options table kept to ``options``.

    Parameters
    ----------
    text:
        The page.
    options:
        (name, declaration) of each option its table documents.

    Returns
    -------
    str
        The page, its table's rows rewritten, added or dropped as the module's docstring says.

    Raises
    ------
    ValueError
        When no table of the page has a row of any of ``options``.
    """
    specs = dict(options)
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if _name(line) in specs]
    if not rows:
        raise ValueError("no table of the page documents any of its options")
    start = end = rows[0]
    while start > 0 and lines[start - 1].startswith("|"):
        start -= 1
    while end + 1 < len(lines) and lines[end + 1].startswith("|"):
        end += 1
    table: list[str] = []
    seen = set()
    for line in lines[start : end + 1]:
        name = _name(line)
        if name is None or (name not in specs and _own(name)):
            table.append(line)
        elif name in specs:
            seen.add(name)
            _, cell, default, meaning = line.split("|", 3)
            new = default_cell(specs[name], default.strip())
            table.append("|".join(["", cell, f" {new} " if new else " ", meaning]))
    table += [_new_row(name, spec) for name, spec in options if name not in seen]
    return "\n".join([*lines[:start], *table, *lines[end + 1 :]])


def generated() -> dict[Path, str]:
    """Each page with a table of options, as this module writes it."""
    return {
        DOCS / page: render((DOCS / page).read_text(), options)
        for page, options in declared().items()
    }


def main(argv: Iterable[str] | None = None) -> int:
    """Rewrite the tables (or, with ``--check``, report the pages that differ).

    Parameters
    ----------
    argv:
        Command-line arguments (``sys.argv[1:]`` when ``None``).

    Returns
    -------
    int
        0, or 1 with ``--check`` when a page differs from what would be written.
    """
    parser = argparse.ArgumentParser(prog="python -m tools.docs_options", description=__doc__)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on a diff")
    args = parser.parse_args(None if argv is None else list(argv))
    status = 0
    for path, text in generated().items():
        current = path.read_text()
        if current == text:
            continue
        if args.check:
            status = 1
            sys.stdout.writelines(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    str(path),
                    f"{path} (generated)",
                )
            )
        else:
            path.write_text(text)
            sys.stdout.write(f"rewrote {path}\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
