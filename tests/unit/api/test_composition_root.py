"""The composition root declares what it holds, and its background loops stop the same way."""

import ast
import inspect
import threading
import time

from adapters.background import Background
from api.composition import stack
from api.composition.settings import Settings
from api.composition.stack import Stack


def assigned_attributes(function: ast.FunctionDef) -> set[str]:
    targets: list[ast.expr] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            targets += node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets.append(node.target)
    names = set()
    for target in targets:
        for part in ast.walk(target):
            if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name) and part.value.id == "self":
                names.add(part.attr)
    return names


def test_every_attribute_the_stack_sets_is_declared_in_its_init(tmp_path):
    tree = ast.parse(inspect.getsource(stack))
    [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Stack"]
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)]
    init = next(m for m in methods if m.name == "__init__")
    later = {name for m in methods if m is not init for name in assigned_attributes(m)}
    assert later - assigned_attributes(init) == set()
    built = Stack(Settings(data_dir=str(tmp_path)), embedded_nats=False)  # a parent of API workers: nothing started
    assert built.services is None and built.views is None and built.runner is None


def test_a_background_loop_stops_at_once_when_asleep_on_its_wake_and_a_never_started_one_stops_too():
    woke: list[float] = []

    def loop() -> None:
        while not background.stopping.is_set():
            background.wake.wait(60)
        woke.append(time.monotonic())

    background = Background(loop, "test-loop")
    background.start()
    began = time.monotonic()
    background.stop()
    assert woke and woke[0] - began < 5
    assert not any(t.name == "test-loop" for t in threading.enumerate())
    Background(loop, "never-started").stop()
