"""The scheduler's asks, committed after its pass: nodes for work no real node takes (within maxNodes), and the
cancellation of requests nothing waits for any more. Runs on the scheduler's thread, so only its leader asks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog

from api.provisioning import metrics
from domain.app import Conflict, NotFound

log = structlog.get_logger("roving.provisioner")
UNNEEDED = "no work waits for it any more"


class Asks:
    def __init__(self, roving: Any) -> None:
        self.roving = roving

    def __call__(self, decisions: Any, now: datetime) -> None:
        for ask in decisions.provision:
            try:
                made = self.roving.request_nodes(ask.provisioner, list(ask.reasons), now)
            except (Conflict, NotFound) as error:
                log.info("provisioner.ask_refused", provisioner=ask.provisioner, reason=str(error))
                continue
            if made:
                metrics.REQUESTS.labels(ask.provisioner).inc(len(made))
                log.info("provisioner.nodes_requested", provisioner=ask.provisioner, requests=made,
                         allocations=list(ask.reasons))
        for unneeded in decisions.unneeded:
            try:
                if self.roving.cancel_request(unneeded.provisioner, unneeded.request_id, UNNEEDED, now):
                    log.info("provisioner.request_canceled", provisioner=unneeded.provisioner,
                             request=unneeded.request_id)
            except (Conflict, NotFound) as error:
                log.info("provisioner.cancel_refused", request=unneeded.request_id, reason=str(error))
