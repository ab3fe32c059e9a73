"""What a preempting allocation's own Placed event says of the work it preempted: how many, on which nodes and why,
never which (the victims are often another tenant's: their workflow ids and stages are not the preemptor's to
read), in a bounded text. Notes logged before this named each victim; they read the same way now."""

from __future__ import annotations

import re

MAX_NODES_NAMED = 8  # the nodes a note names; more read "and N more"
MAX_TEXT = 512  # characters of a note, whatever the node names
_OLD = re.compile(r"Preempted workflow \S+ (?:job|service) \S+ on (.*?): it is preemptible"
                  r"(?: and its priority \S+ is below this one's (\S+) by more than the gap of (\S+?))?"
                  r"(?=; Preempted workflow |$)")


def preempted_text(count: int, nodes: list[str], priority: float | None, gap: float) -> str:
    """`count` allocations preempted on `nodes` (names) for one of priority `priority` (None: not compared)."""
    unique = list(dict.fromkeys(nodes))
    where = ", ".join(unique[:MAX_NODES_NAMED])
    if len(unique) > MAX_NODES_NAMED:
        where += f" and {len(unique) - MAX_NODES_NAMED} more"
    why = "preemptible" if priority is None else \
        f"preemptible, with a priority below this one's {priority:g} by more than the gap of {gap:g}"
    noun = "job" if count == 1 else "jobs"
    text = f"Preempted {count} lower-priority {noun} on {where}: {why}"
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 3] + "..."


def readable_note(note: str) -> str:
    """A Placed event's note as it is shown: one logged in the old form (a sentence naming each victim) is told as
    a count, like the new ones; anything else as written, bounded."""
    old = _OLD.findall(note)
    if not old or not note.startswith("Preempted workflow "):
        return note if len(note) <= MAX_TEXT else note[:MAX_TEXT - 3] + "..."
    nodes = [name for where, _, _ in old for name in where.split(", ")]
    _, priority, gap = old[0]
    try:
        return preempted_text(len(old), nodes, float(priority) if priority else None, float(gap or 0))
    except ValueError:
        return preempted_text(len(old), nodes, None, 0)
