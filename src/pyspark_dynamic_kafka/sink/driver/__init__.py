"""The driver side of a write: the route of each batch."""
