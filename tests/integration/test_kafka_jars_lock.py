"""``kafka_jars.lock`` is what Maven resolves ``kafka_pom.xml`` to today, SHA-1s included: the
jar set the Apache Kafka test clusters fetch without Maven is the one the pom pins (``make
kafka-jars-lock`` regenerates the lock). Needs ``mvn`` and, unless its local repository has the
jars, network access to Maven Central."""

from __future__ import annotations

import shutil

import pytest

from pyspark_dynamic_kafka.testing.kafka_jars import LOCK_PATH
from pyspark_dynamic_kafka.testing.kafka_lock import resolve_lock


@pytest.mark.skipif(shutil.which("mvn") is None, reason="needs Maven (`mvn`) to resolve the pom")
def test_the_lock_is_what_maven_resolves_the_pom_to() -> None:
    assert resolve_lock() == LOCK_PATH.read_text(), "run `make kafka-jars-lock`"
