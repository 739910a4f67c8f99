"""``assignment=group`` and ``commitOffsetsToKafka``: consumer groups on every cluster."""
