"""Executor side of a read: the task contract, the reader, Arrow batches, the GC pause."""
