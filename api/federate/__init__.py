"""`roving federate`: the hub's federated stream over member clusters."""
