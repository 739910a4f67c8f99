"""The executor side of a write: one task produces its rows."""
