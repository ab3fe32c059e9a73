"""Stand-ins for the catalog's container images, offline: busybox images with small stub programs, pushed to a
loopback registry that a registries.conf names as the mirror of docker.io and quay.io, so the catalog's own image
references (`docker://alpine:3.21`, `docker://linuxserver/blender:5.1.0`, ...) are pulled and run under the `oci`
runtime unchanged. The stubs check their inputs and write outputs of the right names; they are not the real tools."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.integration.test_isolation_image import Registry, write_layout

BASH = "#!/bin/sh\n# stand-in for bash: busybox's sh runs the catalog's scripts\nexec /bin/sh \"$@\"\n"
APK = "#!/bin/sh\necho \"apk (stub): $* - busybox already has unzip\"\n"
BLENDER = """#!/bin/sh
# Stand-in for Blender: checks the .blend and the Python script it is given, writes the frame it was asked for.
while [ $# -gt 0 ]; do
  case "$1" in -b) blend=$2; shift ;; -P) py=$2; shift ;; -o) out=$2; shift ;; -f) frame=$2; shift ;; esac
  shift
done
[ -f "$blend" ] || { echo "blender (stub): cannot read $blend" >&2; exit 1; }
grep -q "Orbit camera setup complete" "$py" || { echo "blender (stub): no camera script $py" >&2; exit 1; }
file=$(echo "$out" | sed "s/#####/$(printf %05d "$frame")/").png
echo "frame $frame of $(basename "$blend"), $(wc -c < "$blend") bytes" > "$file"
echo "Fra:$frame saved $file"
"""
FFMPEG = """#!/bin/sh
# Stand-in for ffmpeg: joins the frames matching -i PATTERN (%05d) into the last argument.
for last; do :; done
while [ $# -gt 0 ]; do [ "$1" = "-i" ] && pattern=$2; shift; done
frames=$(ls $(echo "$pattern" | sed 's/%05d/*/') 2>/dev/null)
[ -n "$frames" ] || { echo "ffmpeg (stub): no frames match $pattern" >&2; exit 1; }
cat $frames > "$last"
echo "ffmpeg (stub): $(echo "$frames" | wc -l) frames -> $last"
"""
BWA = """#!/bin/sh
# Stand-in for bwa-mem2: `index REF` writes the index file; `mem -t N REF R1 R2` writes SAM lines, one per read pair.
case "$1" in
  index) [ -f "$2" ] || exit 1; echo "index of $2" > "$2.bwt.2bit.64"; echo "bwa-mem2 (stub): indexed $2" >&2 ;;
  mem) shift; while [ "${1#-}" != "$1" ]; do shift 2; done
       [ -f "$1.bwt.2bit.64" ] || { echo "bwa-mem2 (stub): $1 is not indexed" >&2; exit 1; }
       echo "@SQ	SN:$(head -1 "$1" | cut -c2-)"
       zcat "$2" | awk -v mate="$3" 'NR % 4 == 1 {print substr($1, 2) "\\t0\\tchr\\t1\\t60"}' ;;
  *) exit 2 ;;
esac
"""
SAMTOOLS = """#!/bin/sh
# Stand-in for samtools: `view -o OUT -` stores its input, `flagstat FILE` counts the records.
case "$1" in
  view) cat > "$3" ;;
  flagstat) echo "$(grep -vc '^@' "$2") + 0 in total (QC-passed reads + QC-failed reads)" ;;
esac
"""

IMAGES = {
    "docker.io/library/alpine:3.21": {"sbin/apk": APK},
    "docker.io/linuxserver/blender:5.1.0": {"bin/bash": BASH, "usr/bin/blender": BLENDER},
    "docker.io/jrottenberg/ffmpeg:4.4-alpine": {"usr/bin/ffmpeg": FFMPEG},
    "quay.io/biocontainers/mulled-v2-e5d375990341c5aef3c9aff74f96f66f65375ef6:01a0c9ec663f64217ceb05c225380e9150d8bc52-0":
        {"bin/bash": BASH, "usr/bin/bwa-mem2": BWA, "usr/bin/samtools": SAMTOOLS},
}


def layer(programs: dict[str, str]) -> bytes:
    """busybox with a link per applet, and the stub programs (mode 0755)."""
    buffer = io.BytesIO()
    applets = subprocess.run(["busybox", "--list"], capture_output=True, text=True, check=True).stdout.split()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, mode in (("bin", 0o755), ("sbin", 0o755), ("usr", 0o755), ("usr/bin", 0o755), ("etc", 0o755),
                           ("tmp", 0o1777)):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        tar.add(shutil.which("busybox"), "bin/busybox")
        for applet in applets:
            if applet != "busybox" and f"bin/{applet}" not in programs:
                info = tarfile.TarInfo(f"bin/{applet}")
                info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(info)
        for path, text in programs.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(text.encode()), 0o755
            tar.addfile(info, io.BytesIO(text.encode()))
    return buffer.getvalue()


def write_programs_layout(layout: Path, tag: str, programs: dict[str, str]) -> None:
    write_layout(layout, tag, layer(programs))


class Mirror:
    """The loopback registry holding every stand-in image, and a `skopeo` on PATH that reads the registries.conf
    naming it as docker.io's and quay.io's mirror (skopeo 1.9 ignores CONTAINERS_REGISTRIES_CONF)."""

    def __init__(self, directory: Path) -> None:
        self.registry = Registry(directory)
        for index, (reference, programs) in enumerate(IMAGES.items()):
            repository, _, tag = reference.rpartition(":")
            layout = directory / f"layout-{index}"
            write_programs_layout(layout, tag, programs)
            self.registry.push(layout, tag, repository.split("/", 1)[1])
        conf = directory / "registries.conf"
        conf.write_text("".join(f'[[registry]]\nprefix = "{host}"\nlocation = "{host}"\n[[registry.mirror]]\n'
                                f'location = "{self.registry.address}"\ninsecure = true\n'
                                for host in ("docker.io", "quay.io")))
        self.bin = directory / "bin"
        self.bin.mkdir()
        wrapper = self.bin / "skopeo"
        wrapper.write_text(f"#!/bin/sh\nexec {shutil.which('skopeo')} --registries-conf {conf} \"$@\"\n")
        wrapper.chmod(0o755)

    def stop(self) -> None:
        self.registry.stop()
