"""The pause before starting again something that keeps dying: short at first, doubled each time, capped, and back
to short once a start has lived long enough. One policy for every supervised process (the embedded nats-server,
`roving up`'s local agents and API workers), so a crash loop never spins and a rare crash is mended at once."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Backoff:
    first: float      # the pause after a death that follows a steady run
    longest: float    # the pause never grows past this
    steady: float     # a start that lived this long was a good one: the next pause is `first` again
    pause: float = field(init=False)

    def __post_init__(self) -> None:
        self.pause = self.first

    def after_death(self, lived: float) -> float:
        """The pause before the next start, for a start that lived `lived` seconds; the one after doubles."""
        if lived >= self.steady:
            self.pause = self.first
        wait, self.pause = self.pause, min(self.pause * 2, self.longest)
        return wait
