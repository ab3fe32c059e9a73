"""The provisioners' runner (each provisioner's provider under a lease), the scheduler's asks, and their metrics."""
