"""The sink's options, parsed once on the driver."""
