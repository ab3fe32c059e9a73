"""An image's registry as this node reaches it through skopeo: where a reference lives, whether it is spoken to over
plain HTTP, its raw manifest, a copy into an OCI layout and that layout's layers; refusals become ImageError."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from adapters.pull_progress import PullReport, layer_count, run_following, tool_answer
from adapters.registry_auth import Credential, auth_file, inspect_auth, source_auth
from adapters.runspec import SpecError

PULL_TIMEOUT = 900.0
INSPECT_TIMEOUT = 120.0


class ImageError(SpecError):
    """An image this node cannot run: the message names it and what the registry or skopeo answered."""


def registry_of(reference: str) -> str:
    """`127.0.0.1:5000/app:1` -> `127.0.0.1:5000`; a bare name like `alpine:3` lives on docker.io."""
    first, sep, _ = reference.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"


def is_loopback(registry: str) -> bool:
    host = registry.rsplit(":", 1)[0] if registry.count(":") == 1 else registry
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Skopeo:
    """skopeo as this node runs it: the program, and the registries the admin lets it reach over plain HTTP."""

    program: str = "skopeo"
    insecure: tuple[str, ...] = ()

    def plain_http(self, reference: str) -> bool:
        """Plain HTTP: a loopback registry, or one the admin declared (ROVING_INSECURE_REGISTRIES)."""
        registry = registry_of(reference)
        return is_loopback(registry) or registry in self.insecure

    def inspect(self, image: str, reference: str, auth: Path | None, anonymous: bool = False) -> str:
        """The image's raw manifest, read with `auth` (ImageError with the registry's answer when refused)."""
        argv = [self.program, "inspect", "--raw", *inspect_auth(auth, anonymous)]
        if self.plain_http(reference):
            argv.append("--tls-verify=false")
        try:
            done = subprocess.run([*argv, f"docker://{reference}"], capture_output=True, text=True,
                                  timeout=INSPECT_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise ImageError(f"image {image} cannot be pulled: its registry did not answer in "
                             f"{INSPECT_TIMEOUT:g}s") from None
        if done.returncode != 0:
            answer = tool_answer(done.stderr or done.stdout, done.returncode)
            raise ImageError(f"image {image} cannot be pulled: {answer}")
        return done.stdout

    def copy(self, image: str, reference: str, layout: Path, credential: Credential | None,
             report: PullReport) -> None:
        """skopeo copy into an OCI layout, its blobs counted as they come (their number read from the manifest)."""
        with auth_file(credential, registry_of(reference)) as auth:
            report.blobs = layer_count(self.inspect(image, reference, auth))
            report.started()
            argv = [self.program, "copy", *source_auth(auth)]
            if self.plain_http(reference):
                argv.append("--src-tls-verify=false")
            argv += [f"docker://{reference}", f"oci:{layout}:image"]
            try:
                code, output = run_following(argv, report.line, PULL_TIMEOUT)
            except subprocess.TimeoutExpired:
                raise ImageError(f"image {image} cannot be pulled: skopeo took longer than {PULL_TIMEOUT:g}s") from None
        if code != 0:
            raise ImageError(f"image {image} cannot be pulled: {tool_answer(output, code)}")


def oci_manifest(layout: Path, image: str) -> tuple[str, list[Path]]:
    """The manifest digest (hex) and the layer blobs, bottom first, of the one image in an OCI layout."""
    def blob(digest: str) -> Path:
        algorithm, _, hexdigest = digest.partition(":")
        return layout / "blobs" / algorithm / hexdigest

    try:
        index = json.loads((layout / "index.json").read_text())
        digest = index["manifests"][0]["digest"]
        manifest = json.loads(blob(digest).read_text())
        layers = [blob(layer["digest"]) for layer in manifest["layers"]]
    except (OSError, ValueError, KeyError, IndexError) as error:
        raise ImageError(f"image {image}: skopeo left no readable OCI manifest ({error})") from error
    return digest.partition(":")[2], layers
