"""The source's options, parsed once on the driver (no Kafka call, no metadata read)."""
