"""Which PySpark versions are supported, and what a stream may ask of each."""

from __future__ import annotations

import pytest

from pyspark_dynamic_kafka.spark_versions import (
    NEEDS_ADMISSION_CONTROL,
    UnsupportedSparkError,
    check_supported,
    needing_a_later_spark,
    pyspark_version,
)


def test_versions_are_read_from_pyspark_version_strings() -> None:
    assert pyspark_version("4.0.5") == (4, 0)
    assert pyspark_version("4.3.0.dev1") == (4, 3)
    with pytest.raises(ValueError, match="not a PySpark version: 'four'"):
        pyspark_version("four")


def test_a_pyspark_below_4_0_is_refused_in_one_sentence() -> None:
    with pytest.raises(UnsupportedSparkError) as refused:
        check_supported((3, 5))
    assert str(refused.value) == (
        "pyspark-dynamic-kafka needs PySpark 4.0 or newer (its Python Data Source API), but "
        "PySpark 3.5 is installed: upgrade PySpark"
    )
    check_supported((4, 0))
    check_supported()  # the suite's own PySpark


@pytest.mark.parametrize("option", NEEDS_ADMISSION_CONTROL)
def test_a_read_limit_option_needs_pyspark_4_2(option: str) -> None:
    given = {option.upper(): "10", "streamIds": "orders"}  # Spark's options ignore case
    for version in ((4, 0), (4, 1)):
        why = needing_a_later_spark(given, version)
        assert why is not None
        assert why.startswith(f"option {option} needs PySpark 4.2 or newer")
        assert f"this is PySpark {version[0]}.{version[1]}" in why
    assert needing_a_later_spark(given, (4, 2)) is None
    assert needing_a_later_spark({"streamIds": "orders"}, (4, 0)) is None
