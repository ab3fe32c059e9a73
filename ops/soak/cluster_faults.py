"""The faults of a soak on a three-server NATS cluster (`--nats-cluster 3`): kill -9 of one server, then its restart,
and kill -9 of the API worker that leads the scheduler. A part of the Injector (ops/soak/faults.py).

Their contract: with one server of three gone, /readyz never answers non-200 for more than SERVER_CONTRACT seconds
and no job fails because of it (the workflow invariants check that); a killed leader's singletons (scheduler, audit
feed, provisioners) are taken over, and the scheduler leads again within LEADER_BOUND seconds."""

from __future__ import annotations

import time
from typing import Any

CLUSTER_KINDS = ("server", "leader")
EMBEDDED_KINDS = ("nats", "freeze", "diskfull")  # faults of the embedded server: none runs with a cluster
SERVER_CONTRACT = 2.0  # the longest /readyz may answer non-200 while one server of three is down
SERVER_DOWN = 3.0      # the least time a killed server stays down
CATCH_UP = 2.0         # watched after its restart too: it catches up from the others
LEADER_SLACK = 10.0    # beyond the lease's TTL: the standby asks at a quarter of it, a pass, a slow machine


class ClusterFaults:
    """Needs the Injector's stack, tally, halt and lease."""

    stack: Any
    tally: Any
    halt: Any
    lease: float

    def fault_server(self, fault: Any, index: int) -> None:
        """kill -9 one server for the fault's pause (at least SERVER_DOWN s), start it again; /readyz is watched."""
        victim = int(fault.choice * len(self.stack.cluster.servers))
        began = time.monotonic()
        self.stack.kill_server(victim)
        longest, last = self._watch_readyz(began + max(fault.pause, SERVER_DOWN))
        self.stack.restart_server(victim)
        after, last_after = self._watch_readyz(time.monotonic() + CATCH_UP)
        if max(longest, after) > SERVER_CONTRACT:
            self.tally.violation("readyz_contract", f"server n{victim} killed (fault {index}): /readyz non-200 for "
                                 f"{max(longest, after):.1f}s (last: {last or last_after})")

    def _watch_readyz(self, until: float) -> tuple[float, str]:
        """The longest run of non-200 /readyz answers until `until`, in seconds, and the last such answer."""
        longest, bad_since, last = 0.0, None, ""
        while time.monotonic() < until and not self.halt.is_set():
            status, reason = self.stack.readyz()
            now = time.monotonic()
            if status == 200:
                bad_since = None
            else:
                bad_since, last = bad_since or now, f"{status} {reason[:200]}"
                longest = max(longest, now - bad_since)
            time.sleep(0.1)
        return longest, last

    def fault_leader(self, fault: Any, index: int) -> None:
        """kill -9 the API worker leading the scheduler; another (or its restart) must lead within the bound."""
        from ops.soak import procs

        pid = self.stack.scheduler_leader()
        if pid is None:
            self.tally.fault("leader_not_found")
            return
        procs.kill(pid)
        began = time.monotonic()
        bound = self.lease + LEADER_SLACK
        while time.monotonic() - began < bound and not self.halt.is_set():
            found = self.stack.scheduler_leader(tries=5)
            if found is not None and found != pid:
                self.tally.fault(f"leader_failover_{int(time.monotonic() - began)}s")
                return
        if not self.halt.is_set():
            self.tally.violation("leader_not_replaced", f"no API worker led the scheduler {bound:.0f}s after the "
                                                        f"leader (pid {pid}) was killed (fault {index})")
