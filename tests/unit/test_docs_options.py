"""The options tables of the guides are what tools/docs_options.py generates from the code's
declarations (``python -m tools.docs_options`` rewrites them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tools import docs_options

from pyspark_dynamic_kafka.optionspec import OptionSpec


@pytest.mark.parametrize("path", sorted(docs_options.generated()), ids=lambda p: p.name)
def test_the_options_table_is_generated_from_the_declarations(path: Path) -> None:
    assert path.read_text() == docs_options.generated()[path], (
        f"{path.name} differs from its declarations: python -m tools.docs_options"
    )


def _spec(key: str, **kwargs: object) -> OptionSpec[str]:
    fields: dict[str, object] = {"default": None, "doc": f"what {key} does"} | kwargs
    return OptionSpec(key, str, **fields)  # type: ignore[arg-type]


PAGE = """# Options

| option | default | meaning |
| --- | --- | --- |
| `a` | `1` | a's prose, kept |
| `gone` | `x` | an option no longer declared |
| `kafka.*` | | a client property: the page's own row |
| `b` | none | b's prose |

After the table.
"""


def test_rows_are_kept_to_the_declarations_and_the_prose_is_kept() -> None:
    options = [
        ("a", _spec("a", default="2", batch_default="3")),
        ("b", _spec("b")),
        ("c", _spec("c", scope="stream", default="5")),
        ("d", _spec("d", scope="batch", required=True)),
    ]
    assert (
        docs_options.render(PAGE, options)
        == """# Options

| option | default | meaning |
| --- | --- | --- |
| `a` | `2` (streams), `3` (batch) | a's prose, kept |
| `kafka.*` | | a client property: the page's own row |
| `b` | none | b's prose |
| `c` | `5` | streams: what c does |
| `d` | (required) | batch only: what d does |

After the table.
"""
    )


def test_a_page_without_a_row_of_its_options_is_refused() -> None:
    with pytest.raises(ValueError, match="no table"):
        docs_options.render(PAGE, [("z", _spec("z"))])
