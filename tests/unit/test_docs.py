"""The README documents every option with its default."""

from __future__ import annotations

from pathlib import Path

from pyspark_dynamic_kafka.source.options import OPTIONS

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_starts_with_the_two_commands() -> None:
    text = README.read_text()
    head = text[: text.index("## ")]
    assert "make demo" in head and "make test" in head


def test_every_option_has_a_row_with_its_default() -> None:
    rows = {
        line.split("|")[1].strip().strip("`"): line
        for line in README.read_text().splitlines()
        if line.startswith("| `")
    }
    for key, spec in OPTIONS.items():
        assert key in rows, f"README options table lacks {key}"
        if spec.default is not None:
            assert f"`{spec.default}`" in rows[key], f"README row of {key} lacks its default"
