"""Shipping the agent's spooled output (adapters/log_spool.py) to the log stream: in order, one acknowledged message
at a time (the stream's pace is the shipper's: back-pressure, never loss), each under a message id made of the node,
the stage attempt and the spool offset, so a message sent again after a lost ack or a restart is stored once."""

from __future__ import annotations

from collections.abc import Callable

import structlog

from adapters.log_spool import END, Frame, Spool, StageSpool, end_of
from adapters.logs import END_HEADER, MAX_MESSAGE, RANKS_HEADER, STREAM_HEADER, Logs

MSG_ID = "Nats-Msg-Id"
log = structlog.get_logger("roving.spool")
ROUND = 4 * 1024 * 1024  # spooled bytes of one stage attempt a round ships before it turns to the next


class Shipper:
    """Sends every spool's unacknowledged frames; a failure raises and the next call takes up where it stopped."""

    def __init__(self, logs: Logs, spool: Spool, node: Callable[[], str]) -> None:
        self.logs, self.spool, self.node = logs, spool, node
        self.shipped_bytes = 0

    async def ship(self) -> None:
        """Everything spooled so far (and what is spooled meanwhile), in rounds."""
        while await self.round():
            pass

    async def round(self) -> bool:
        """Up to ROUND bytes of each stage attempt with output to ship, so a job that writes faster than the stream
        takes never holds back another's log (or its end, which its exit report waits for); False: nothing was."""
        pending = self.spool.pending()
        for stage in pending:
            await self.ship_stage(stage, ROUND)
        return bool(pending)

    async def ship_stage(self, stage: StageSpool, budget: int) -> None:
        """Its frames from the acknowledged offset, `budget` bytes at most; a spool shipped to its end goes.

        The offsets are marked around each message (two writes and a rename each) only where a restart needs them:
        once a spool has ended its next message is the same whenever it is made (the end stops every run of
        frames), so it is not marked in flight; and its last message is not marked done, since the spool goes. An
        agent that dies in between sends that message again under the same id, and the stream stores it once."""
        done, flight = stage.shipped()
        until = min(stage.size, done + budget)
        while done < until:
            ended = stage.ended  # read before the frames are: a job's reader thread may end it meanwhile
            try:
                frames = message_frames(stage, done, flight)
            except (OSError, IndexError) as error:  # its file went (by hand): it must not hold the others back
                log.error("spool.unreadable", spool=stage.key, error=repr(error))
                self.spool.forget(stage)
                return
            end = frames[-1].end
            if flight <= done and not ended:  # said before sending: a restart sends exactly this message again
                stage.mark(done, end)
            await self._publish(stage, frames)
            done = flight = end
            stage.mark(done, done, durable=not (ended and done >= stage.size))
        if stage.ended and done >= stage.size:
            self.spool.forget(stage)

    async def _publish(self, stage: StageSpool, frames: list[Frame]) -> None:
        first = frames[0]
        headers = {MSG_ID: f"{self.node()}:{stage.key}:{first.offset}"}
        if first.kind == END:
            ranks, reason = end_of(first.payload)
            headers.update({END_HEADER: reason or "exited", **({RANKS_HEADER: str(ranks)} if ranks > 1 else {})})
            payload = b""
        else:
            headers[STREAM_HEADER] = first.stream
            payload = b"".join(frame.payload for frame in frames)
        await self.logs.js.publish(self.logs.subject(stage.meta.workflow_id, stage.meta.stage), payload,
                                   headers=headers)
        self.shipped_bytes += len(payload)


def message_frames(stage: StageSpool, done: int, flight: int) -> list[Frame]:
    """The frames of the next message: the one in flight again, or as many of one stream's as fit (an end alone)."""
    if flight > done:
        return stage.frames(done, MAX_MESSAGE, until=flight)
    frames = stage.frames(done, MAX_MESSAGE)
    return frames[:1] if frames[0].kind == END else _run(frames)


def _run(frames: list[Frame]) -> list[Frame]:
    """The leading frames of one kind."""
    run = [frames[0]]
    for frame in frames[1:]:
        if frame.kind != run[0].kind:
            break
        run.append(frame)
    return run
