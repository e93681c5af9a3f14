#!/usr/bin/env python3
"""oci-image.py - a one-layer OCI image archive from host files, with no registry and no builder.

Usage: oci-image.py OUT.tar NAME:TAG [--entrypoint ARG]... [--stop-signal SIG]
                    [--file HOST_PATH:IMAGE_PATH]... [--link TARGET:IMAGE_PATH]...

The archive is an OCI image layout in a tar (what `ctr images import` and `skopeo copy
oci-archive:` read): index.json names the image in the annotations containerd's importer reads
(io.containerd.image.name = NAME:TAG, org.opencontainers.image.ref.name = TAG). One
uncompressed layer holds the --file entries (mode kept, owner root, mtime 0) and the --link
symlinks; the config is linux/amd64 with ENTRYPOINT and STOPSIGNAL. The same inputs give the
same bytes, so a cache keyed by the archive's hash stays valid (tools/vm/build-node-disk.sh).
"""
import argparse
import hashlib
import io
import json
import os
import sys
import tarfile


def tar_bytes(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        dirs = set()
        for kind, src, dst in entries:
            parts = dst.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    ti = tarfile.TarInfo(d)
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                    t.addfile(ti)
            ti = tarfile.TarInfo(dst.strip("/"))
            ti.mtime, ti.uid, ti.gid = 0, 0, 0
            if kind == "link":
                ti.type, ti.linkname, ti.mode = tarfile.SYMTYPE, src, 0o777
                t.addfile(ti)
            else:
                with open(src, "rb") as f:
                    data = f.read()
                ti.size, ti.mode = len(data), os.stat(src).st_mode & 0o7777
                t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def blob(out, data):
    digest = hashlib.sha256(data).hexdigest()
    out.append(("blobs/sha256/" + digest, data))
    return "sha256:" + digest


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("name")
    ap.add_argument("--entrypoint", action="append", default=[])
    ap.add_argument("--stop-signal")
    ap.add_argument("--file", action="append", default=[])
    ap.add_argument("--link", action="append", default=[])
    a = ap.parse_args()
    if ":" not in a.name.rsplit("/", 1)[-1]:
        sys.exit("oci-image.py: the name needs a tag (NAME:TAG): " + a.name)
    entries = [("file",) + tuple(f.split(":", 1)) for f in a.file]
    entries += [("link",) + tuple(l.split(":", 1)) for l in a.link]
    blobs = []
    layer = tar_bytes(entries)
    layer_digest = blob(blobs, layer)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Entrypoint": a.entrypoint,
                   "Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
    }
    if a.stop_signal:
        config["config"]["StopSignal"] = a.stop_signal
    config_data = json.dumps(config, sort_keys=True).encode()
    config_digest = blob(blobs, config_data)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": config_digest, "size": len(config_data)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest, "size": len(layer)}],
    }
    manifest_data = json.dumps(manifest, sort_keys=True).encode()
    manifest_digest = blob(blobs, manifest_data)
    index = {
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": manifest_digest, "size": len(manifest_data),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"io.containerd.image.name": a.name,
                            "org.opencontainers.image.ref.name": a.name.rsplit(":", 1)[1]},
        }],
    }
    files = [("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode()),
             ("index.json", json.dumps(index, sort_keys=True).encode())] + blobs
    tmp = a.out + ".tmp"
    with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:
        for path, data in files:
            ti = tarfile.TarInfo(path)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            t.addfile(ti, io.BytesIO(data))
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
