"""The operator's files that ship with Roving (Prometheus rules, Alertmanager routes, Grafana dashboards, NATS
configs, systemd units, the nginx site), found through `ROOT` in a source tree and in an installed wheel alike.

A wheel installs this package as `roving.ops` (roving/ops links here), never as a top-level `ops`, which is another
library's name; its package data (pyproject.toml) go beside it, and `roving up --monitoring` reads its rules from
there; `python -c 'import roving.ops; print(roving.ops.ROOT)'` shows where."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent
