"""The Spark types of Avro schemas (:mod:`pyspark_dynamic_kafka.avro.spark_types`) against
spark-avro's own conversion, ``SchemaConverters.toSqlType`` (what ``from_avro`` gives), run by
``java/AvroSparkTypes.java`` on the installed PySpark's jars and spark-avro 4.2.0 from Maven
Central (4.3.0 is not published): every schema of the unit tests, the same type and
nullability, and a refusal where Spark refuses or gives a type PySpark cannot represent."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pyspark
import pytest
from pyspark.sql.types import _parse_datatype_json_value
from tests.unit.test_avro_spark_types import NULLABLE, ORDER, REFUSED, TYPED, UNREPRESENTABLE

from pyspark_dynamic_kafka.avro.spark_types import AvroSchemaError, spark_type
from pyspark_dynamic_kafka.testing.kafka_jars import cache_root, find_java, maven_jars

_JAVA = Path(__file__).resolve().parent / "java"
_POM = _JAVA / "spark-avro" / "pom.xml"


def _spark_avro() -> Path:
    digest = hashlib.sha256(_POM.read_bytes()).hexdigest()
    target = cache_root() / f"spark-avro-{digest[:12]}"
    return maven_jars(_POM, target, digest=digest, what="spark-avro", expect="spark-avro*.jar")


def _sparks(schemas: list[Any]) -> list[str]:
    """spark-avro's answer per schema: ``<nullable> <type JSON>`` or ``ERROR <exception>``."""
    pyspark_jars = Path(pyspark.__file__).parent / "jars"
    classpath = f"{pyspark_jars}/*:{_spark_avro()}/*"
    done = subprocess.run(
        [find_java(), "-cp", classpath, str(_JAVA / "AvroSparkTypes.java")],
        input="".join(json.dumps(s) + "\n" for s in schemas),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout.splitlines()


def test_every_schema_types_as_spark_avro_types_it() -> None:
    typed = [schema for schema, _ in TYPED + NULLABLE] + [ORDER]
    refused = [schema for schema, _ in REFUSED]
    answers = _sparks(typed + refused)
    assert len(answers) == len(typed) + len(refused)
    for schema, answer in zip(typed, answers, strict=False):
        nullable, _, data_type = answer.partition(" ")
        ours = spark_type(schema)
        assert (ours.nullable, json.loads(ours.data_type.json())) == (
            nullable == "true",
            json.loads(data_type),
        ), (schema, answer)
    for schema, answer in zip(refused, answers[len(typed) :], strict=True):
        with pytest.raises(AvroSchemaError):
            spark_type(schema)
        if schema in UNREPRESENTABLE:  # Spark has a type for it, which PySpark cannot parse
            with pytest.raises(Exception, match="CANNOT_PARSE_DATATYPE"):
                _parse_datatype_json_value(json.loads(answer.partition(" ")[2]))
        else:
            assert answer.startswith("ERROR "), (schema, answer)
