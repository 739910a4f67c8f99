"""Thin helpers over confluent-kafka: client configuration, offset listing, consumer pooling."""
