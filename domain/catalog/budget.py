"""What one render of a catalog template may spend: steps, output, printf widths, `range` counts, value sizes and a
deadline.

Any member renders any template of a source they can see, and an organization owner writes the templates: without a
budget one `{{printf "%0999999999d" 1}}` or `{{range 3000000}}` holds the control plane's memory and CPU for
everyone. The domain has no clock, so the deadline comes in as `expired`, a callable the caller's layer answers from
its own clock; the step budget alone already bounds a render's time on any machine.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from domain.catalog.gofuncs import MAX_INT_BITS, MAX_ITEMS, MAX_TEXT, MAX_WIDTH, RenderError, texts_size

MAX_STEPS = 200_000  # actions, calls and loop turns (the largest reference template takes 207)
MAX_OUTPUT = MAX_TEXT  # characters of rendered text, and of any one string a function makes
MAX_RANGE = MAX_ITEMS  # turns of one `range`, and items of a list a function makes
CHECK_EVERY = 256  # steps between two looks at the deadline


__all__ = ["MAX_WIDTH", "Budget", "BudgetExceeded"]


class BudgetExceeded(RenderError):
    """A render past one of its limits: the message names the limit and its value."""


def _never() -> bool:
    return False


@dataclass
class Budget:
    """One render's allowance; `spend` and `admit` raise BudgetExceeded past a limit."""

    expired: Callable[[], bool] = _never
    max_steps: int = MAX_STEPS
    max_output: int = MAX_OUTPUT
    max_range: int = MAX_RANGE
    seconds: float = 0.0  # the deadline's length, for the message only
    steps: int = 0
    output: int = 0
    next_check: int = 0

    def spend(self, steps: int = 1) -> None:
        self.steps += steps
        if self.steps > self.max_steps:
            raise BudgetExceeded(f"the render took over {self.max_steps:,} steps (the limit)")
        if self.steps >= self.next_check:
            self.next_check = self.steps + CHECK_EVERY
            if self.expired():
                raise BudgetExceeded("the render ran past its deadline" + (f" of {self.seconds:g} s" if self.seconds
                                                                            else ""))

    def write(self, text: str) -> None:
        self.output += len(text)
        if self.output > self.max_output:
            raise BudgetExceeded(f"the rendered text is over {self.max_output:,} characters (the limit)")

    def turns(self, count: int) -> None:
        if count > self.max_range:
            raise BudgetExceeded(f"range over {count:,} items is over the limit of {self.max_range:,}")
        self.spend(count)

    def call(self, name: str, values: list[Any], joining: bool) -> None:
        """A call about to be made: a step per argument, and for a function whose result holds every argument's
        text, refused before it is made when that text is already over the limit (300 copies of a 1 MiB string
        would be 300 MiB)."""
        self.spend(1 + len(values))
        if joining and texts_size(values) > self.max_output:
            raise BudgetExceeded(f"{name} would make a string of over {self.max_output:,} characters (the limit)")

    def admit(self, value: Any, name: str) -> Any:
        """A function's result, refused when it is larger than any render may hold; a large one costs steps (making it
        cost time in proportion)."""
        if isinstance(value, str):
            if len(value) > self.max_output:
                raise BudgetExceeded(f"{name} made a string of over {self.max_output:,} characters (the limit)")
            self.spend(len(value) // 64)  # a 1 MiB string costs 16,384 steps: a render holds few of them
        elif isinstance(value, list | tuple | dict):
            if len(value) > self.max_range:
                raise BudgetExceeded(f"{name} made {len(value):,} items, over the limit of {self.max_range:,}")
            self.spend(len(value) // 16)
        elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
            raise BudgetExceeded(f"{name} made a number of over {MAX_INT_BITS} bits (the limit)")
        return value
