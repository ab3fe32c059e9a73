"""Soak harness: a seeded workload and faults against a real `roving up`, checked against the log's invariants."""
