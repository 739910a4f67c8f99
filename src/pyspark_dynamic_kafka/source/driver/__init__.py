"""Driver side of a read: metadata, listing, starting positions, reconciliation, planning."""
