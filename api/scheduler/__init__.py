"""`roving scheduler` and the scheduler runner: the leader lease, the pure decision pass and its commit."""
