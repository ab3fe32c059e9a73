"""The `roving` distribution's own import name, for what is not code of a layer: its operator files.

`roving.ops` is the source tree's ops/ (a symlink here; real files in a wheel): Prometheus rules, Alertmanager
routes, Grafana dashboards, NATS configs, systemd units and the nginx site. A wheel installs them there, and no
top-level `ops` package, so `pip install roving` beside the `ops` library (Canonical's charm framework) leaves both
intact; `python -c 'import roving.ops; print(roving.ops.ROOT)'` shows where they are."""
