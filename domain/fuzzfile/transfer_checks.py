"""Meaning checks on volumes' ingress and egress: schemes each direction moves, `file://` paths that stay inside
the volume, secret references, and the keys Roving accepts but does not act on (each warned about by name)."""

from __future__ import annotations

from domain.fuzzfile.decode import join
from domain.fuzzfile.graph import steps
from domain.fuzzfile.schema import Problem, Transfer, Volume, Workflow
from domain.fuzzfile.transfers import EGRESS, EGRESS_SCHEMES, INGRESS, INGRESS_SCHEMES, transfer_stage_name

FILE = "file://"


def check_transfers(workflow: Workflow) -> tuple[list[Problem], list[Problem]]:
    errors: list[Problem] = []
    warnings: list[Problem] = []
    names = set(steps(workflow))
    for name, volume in (workflow.volumes or {}).items():
        path = join("volumes", name)
        for kind in (INGRESS, EGRESS):
            if getattr(volume, kind) and transfer_stage_name(kind, name) in names:
                errors.append(Problem(path, f"`{transfer_stage_name(kind, name)}` is the name of this volume's "
                                            f"{kind} stage; rename the job or service that uses it"))
        for index, transfer in enumerate(volume.ingress or []):
            where = f"{path}.ingress[{index}]"
            _remote(transfer.source.uri, INGRESS_SCHEMES, f"{where}.source.uri", "an ingress source", errors, warnings)
            _inside(transfer.destination.uri, f"{where}.destination.uri", errors)
            _common(transfer, where, errors, warnings)
        for index, transfer in enumerate(volume.egress or []):
            where = f"{path}.egress[{index}]"
            _inside(transfer.source.uri, f"{where}.source.uri", errors)
            _remote(transfer.destination.uri, EGRESS_SCHEMES, f"{where}.destination.uri", "an egress destination",
                    errors, warnings)
            _common(transfer, where, errors, warnings)
        _legacy(volume, path, warnings)
    return errors, warnings


def _remote(uri: str, schemes: tuple[str, ...], path: str, what: str, errors: list[Problem],
            warnings: list[Problem]) -> None:
    if not uri.startswith(schemes):
        errors.append(Problem(path, f"{what} is one of {', '.join(s + '...' for s in schemes)}; got `{uri}`"))
    elif uri.startswith("http://") and what == "an egress destination":
        warnings.append(Problem(path, f"{uri}: egress over plain http sends the file unencrypted"))


def _inside(uri: str, path: str, errors: list[Problem]) -> None:
    """`file://dir/name` is a path in the volume; no absolute path, no `..`."""
    relative = uri.removeprefix(FILE).lstrip("/") if uri.startswith(FILE) else None
    if relative is None:
        errors.append(Problem(path, f"the volume's side of a transfer is file://PATH in the volume; got `{uri}`"))
    elif not relative or ".." in relative.split("/"):
        errors.append(Problem(path, f"`{uri}` must name a file inside the volume (no `..`)"))


def _common(transfer: Transfer, where: str, errors: list[Problem], warnings: list[Problem]) -> None:
    for side in ("source", "destination"):
        secret = getattr(transfer, side).secret
        if secret is not None and not secret.startswith("secret://"):
            errors.append(Problem(f"{where}.{side}.secret", "secret must be a reference such as secret://user/NAME"))
    if transfer.policy is not None:
        warnings.append(Problem(f"{where}.policy", "ignored: transfers retry with backoff on their own"))
    if transfer.cache is not None:
        warnings.append(Problem(f"{where}.cache", "ignored: this cluster keeps no transfer cache"))


def _legacy(volume: Volume, path: str, warnings: list[Problem]) -> None:
    for key in ("type", "path"):
        if getattr(volume, key) is not None:
            warnings.append(Problem(f"{path}.{key}", f"`{key}` is ignored: a volume is what its `reference` names"))
