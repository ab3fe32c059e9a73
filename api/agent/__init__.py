"""`roving agent`: the node agent process: its arguments, its loop, its slots, reports and metrics."""
