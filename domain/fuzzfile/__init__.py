"""The Fuzzfile: Fuzzball workflow definitions parsed, validated and listed as stages (public API here)."""

from domain.fuzzfile.parse import ParseResult, parse_fuzzfile
from domain.fuzzfile.policy import RetryRule
from domain.fuzzfile.schema import Problem, Workflow
from domain.fuzzfile.stages import Needs, Resources, Stage, list_stages, task_stage_name

__all__ = [
    "Needs",
    "ParseResult",
    "Problem",
    "Resources",
    "RetryRule",
    "Stage",
    "Workflow",
    "list_stages",
    "parse_fuzzfile",
    "task_stage_name",
]
