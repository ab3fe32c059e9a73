"""Properties over random DAGs and random outcomes: conditions hold before a stage runs, every stage ends."""

from hypothesis import given, settings
from hypothesis import strategies as st
from workflow_builders import at, fuzzfile, step, submit

EXITS = st.sampled_from([0, 0, 1, 2, "node"])


@st.composite
def dags(draw):
    """A random acyclic workflow: each job may depend on earlier ones with FINISHED or FAILED."""
    count = draw(st.integers(2, 7))
    jobs, needs, budgets = [], {}, {}
    for i in range(count):
        name = f"j{i}"
        earlier = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=2)) if i else []
        needs[name] = [(f"j{e}", draw(st.sampled_from(["FINISHED", "FAILED"]))) for e in earlier]
        budgets[name] = draw(st.integers(0, 2))
        policy = f"policy: {{retry: {{on: [node, 1], attempts: {budgets[name]}}}}}" if budgets[name] else ""
        jobs.append(step(name, ",".join(f"{d}:{s}" for d, s in needs[name]), policy))
    return fuzzfile(jobs), needs, budgets


def holds(workflow, dep: str, status: str) -> bool:
    return workflow.stage(dep).status.value == status


@settings(max_examples=150, deadline=None)
@given(dags(), st.data())
def test_random_workflows_run_each_stage_only_when_its_conditions_hold_and_every_stage_ends(dag, data):
    text, needs, budgets = dag
    workflow = submit(text)
    started: set[str] = set()
    for tick in range(200):
        ready = workflow.ready_stages()
        if not ready:
            break
        choice = data.draw(st.sampled_from(ready)).stage.name
        assert all(holds(workflow, d, s) for d, s in needs[choice]), f"{choice} started before its conditions held"
        attempt = workflow.stage(choice).attempt
        workflow.stage_started(choice, attempt, "n1", at(tick))
        started.add(choice)
        outcome = data.draw(EXITS)
        if outcome == "node":
            workflow.stage_lost_node(choice, attempt, at(tick))
        else:
            workflow.stage_exited(choice, attempt, outcome, at(tick))
    views = {v.name: v for v in workflow.stage_views()}
    assert all(v.status.ended for v in views.values()), "a stage never ended"
    assert workflow.status in ("FINISHED", "FAILED")
    for name, view in views.items():
        assert view.retries_used <= budgets[name]
        if [s for _, s in needs[name]] == ["FAILED"]:
            dep = needs[name][0][0]
            assert (name in started) == (views[dep].status.value == "FAILED")
