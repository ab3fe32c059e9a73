"""`roving up` and `roving api`: the whole local stack, and the local pool's agents it keeps running."""
