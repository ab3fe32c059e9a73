"""Volume provisioner routes: `PUT|GET|DELETE /v4/volume-provisioners/{name}` and `GET /v4/volume-provisioners`.

All cluster admins' (domain.app.storage_provisioners): a provisioner's volumes name their organizations, owners
and directories, which no member may read of another's. A member sees a volume's provisioning where it matters to
them, as the blocked reason of the stage that waits for it.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from api.http.answers import more as shapes
from api.http.routes import common as c
from domain.app.errors import Forbidden, NotFound
from domain.storage_provisioner import StorageProvisioners, Volume
from domain.storage_provisioner_spec import StorageBody


async def put(request: Request) -> Response:
    name = request.path_params["name"]
    body = await c.body(request, StorageBody)
    svc = c.services(request)
    before = svc.roving.volume_provisioners.find()
    existed = before is not None and name in before.definitions
    found = await c.call(svc.roving.set_volume_provisioner, name, body, c.principal(request), c.now())
    return c.json(answer(found, name), status=200 if existed else 201)


async def get(request: Request) -> Response:
    _admin(request)
    found = c.services(request).roving.volume_provisioners.find()
    name = request.path_params["name"]
    if found is None or name not in found.definitions:
        raise NotFound(f"volume provisioner {name}")
    return c.json(answer(found, name, volumes=True))


async def list_provisioners(request: Request) -> Response:
    _admin(request)
    found = c.services(request).roving.volume_provisioners.find()
    names = sorted(found.definitions) if found is not None else []
    return c.json(shapes.VolumeProvisioners(provisioners=[answer(found, n) for n in names if found is not None]))


async def delete(request: Request) -> Response:
    name = request.path_params["name"]
    failed = await c.call(c.services(request).roving.delete_volume_provisioner, name, c.principal(request), c.now())
    return c.json(shapes.VolumeProvisionerDeleted(name=name, deleted=True, failed=[v.request for v in failed]))


def _admin(request: Request) -> None:
    if not c.principal(request).is_cluster_admin:
        raise Forbidden("volume provisioners are shown to cluster admins only")


def answer(found: StorageProvisioners, name: str, volumes: bool = False) -> shapes.VolumeProvisioner:
    """A volume provisioner as the API shows it: its definition (field names as PUT takes them), its volumes by
    state, and with `volumes` each one."""
    spec = found.definitions[name]
    by, at = found.changed.get(name, ("", None))
    made = found.of(name)
    counts: dict[str, int] = {}
    for v in made:
        counts[v.state.value] = counts.get(v.state.value, 0) + 1
    return shapes.VolumeProvisioner(name=name, storage_class=spec.storage_class, program=spec.program, root=spec.root,
                                    timeout_seconds=spec.timeout_seconds, changed_by=by, changed_at=at,
                                    volumes=[_volume(v) for v in made] if volumes else counts)


def _volume(v: Volume) -> shapes.StorageVolume:
    return shapes.StorageVolume(
        request=v.request, reference=v.reference, organization=v.organization, uid=v.uid, gid=v.gid,
        state=v.state.value, path=v.path, reason=v.reason, attempts=v.attempts, requested_at=v.requested_at,
        ended_at=v.ended_at, waiting=len(v.waiting))


routes = [
    Route("/v4/volume-provisioners", list_provisioners, methods=["GET"]),
    Route("/v4/volume-provisioners/{name}", put, methods=["PUT"]),
    Route("/v4/volume-provisioners/{name}", get, methods=["GET"]),
    Route("/v4/volume-provisioners/{name}", delete, methods=["DELETE"]),
]
