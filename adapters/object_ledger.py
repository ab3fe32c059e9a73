"""What the object puts running in this process hold of each holder's quota and of the store's: the bytes each has
streamed so far, the new names they will add, the bytes committed since each read its holder's use, and how many
run at once per holder.

A put reads its holder's use once, as it begins; without this, puts at once would each see the use before the
others' and together pass the quota by what they put. With it, a put's room is the quota less that use, less what
the other puts in flight have streamed, less what was committed since it read. Everything here is touched only on
the store's loop, between awaits, so a check and its reservation are one step. Another process's puts are not seen
here: the store re-checks the holder's use as stored before each commit.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

PUTS_AT_ONCE = 4  # per holder and process: enough to fill a link, few enough that each holds a useful share


class Busy(Exception):
    """A holder has as many puts running as it may; this one did not start."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"at most {limit} puts at once per user or group")
        self.limit = limit


@dataclass
class HolderLedger:
    puts: int = 0
    streamed: int = 0  # bytes streamed so far by this holder's puts in flight
    new_names: int = 0  # objects those puts will add (a name that was not there as they began)
    committed: int = 0  # bytes committed while any of its puts ran (only differences of it mean anything)


@dataclass
class Slot:
    """One put's share: what it has streamed and whether it adds a name, and the counters as it began."""

    holder: HolderLedger
    ledger: Ledger
    since: int
    size: int = 0
    new_name: bool = False
    done: bool = False

    def ahead(self) -> int:
        """Bytes of the holder's that this put's reading of the use does not include: the other puts' streamed
        so far, and those committed since it read."""
        return self.holder.streamed - self.size + self.holder.committed - self.since

    def store_ahead(self, committed_then: int) -> int:
        """The same over every holder, against a store total read when `store_committed` was `committed_then`."""
        return self.ledger.store_streamed - self.size + self.ledger.store_committed - committed_then

    def grow(self, size: int) -> None:
        self.holder.streamed += size - self.size
        self.ledger.store_streamed += size - self.size
        self.size = size

    def adds_name(self) -> None:
        self.new_name = True
        self.holder.new_names += 1

    def committed(self) -> None:
        """Its bytes are stored now: the puts that read the use before count them as committed."""
        self.holder.committed += self.size
        self.ledger.store_committed += self.size
        self.release()

    def release(self) -> None:
        if self.done:
            return
        self.done = True
        self.grow(0)
        if self.new_name:
            self.holder.new_names -= 1


@dataclass
class Ledger:
    puts_at_once: int = PUTS_AT_ONCE
    holders: dict[str, HolderLedger] = field(default_factory=dict)
    store_streamed: int = 0
    store_committed: int = 0

    @contextmanager
    def slot(self, bucket: str) -> Iterator[Slot]:
        """A put's share of its holder's quota while it runs; Busy past `puts_at_once` for the holder."""
        holder = self.holders.setdefault(bucket, HolderLedger())
        if holder.puts >= self.puts_at_once:
            raise Busy(self.puts_at_once)
        holder.puts += 1
        slot = Slot(holder, self, since=holder.committed)
        try:
            yield slot
        finally:
            slot.release()
            holder.puts -= 1
            if not holder.puts:  # nothing reads its counters any more
                del self.holders[bucket]
