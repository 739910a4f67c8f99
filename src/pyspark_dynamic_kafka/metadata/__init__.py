"""Kafka metadata: the stream model and the services that resolve stream ids."""
