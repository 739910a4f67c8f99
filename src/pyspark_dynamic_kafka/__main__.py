"""``python -m pyspark_dynamic_kafka``: the ``dynamic-kafka`` command line."""

from pyspark_dynamic_kafka.cli import main

raise SystemExit(main())
