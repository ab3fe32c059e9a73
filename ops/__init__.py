"""The operator's files that ship with Roving (Prometheus rules, Alertmanager routes, Grafana dashboards, NATS
configs, systemd units, the nginx site), found through `ROOT` in a source tree and in an installed wheel alike.

They are package data of this package (pyproject.toml), so `pip install roving` puts them beside the code and
`roving up --monitoring` reads its rules from there; `python -c 'import ops; print(ops.ROOT)'` shows where."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
