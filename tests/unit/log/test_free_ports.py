"""Ports handed out together are all different, so a local cluster's routes and client ports never collide (CI
once drew one route port twice, and the three-server test's first server refused to start)."""

from __future__ import annotations

from adapters.nats_cluster import LocalCluster
from adapters.nats_server import free_ports


def test_two_hundred_ports_asked_for_together_are_all_different():
    ports = free_ports(200)  # one at a time, 200 draws repeat a port about half the time
    assert len(set(ports)) == 200


def test_a_local_clusters_route_and_client_ports_are_all_different(tmp_path):
    for _ in range(20):
        cluster = LocalCluster(tmp_path)
        servers = cluster.servers
        assert servers[0].cluster is not None
        ports = [*servers[0].cluster.routes, *(s.port for s in servers)]
        assert len(set(ports)) == 6, ports
