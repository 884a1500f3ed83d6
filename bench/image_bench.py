"""Benchmark of the container image, built from the unchanged Dockerfile with buildah as the
image tests build it (base images from Debian's packages, wheels from a wheelhouse):

* build: cold (``--no-cache``) and cached (the same context again) wall times;
* size: the image unpacked (the sum of its layers);
* start: from the start of the image's command to a ready ``/readyz``, ``--starts`` times on
  the same data volume (the first on an empty one);
* core: the ``core`` a timed analysis reports from inside the container.

    python bench/image_bench.py [--starts 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dots_solve_bench import table

from boxfish.service.runtime.embedded_redis import free_port
from tests.image import buildah


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=3)
    args = ap.parse_args()
    buildah.check_tools()
    tag = f"localhost/boxfish-bench:{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="boxfish-image-") as tmp:
        buildah.base_images()
        context = buildah.build_context(Path(tmp))
        cold, _ = buildah.build(context, tag, no_cache=True)
        cached, _ = buildah.build(context, tag)
        size = buildah.size_bytes(tag)
        container = buildah.Container(tag)
        port = free_port()
        marker = f"BOXFISH_PORT={port}"
        url = f"http://127.0.0.1:{port}"
        cmd = buildah.config(tag)["Cmd"]
        ready, core = [], None
        try:
            for _ in range(args.starts):
                proc = container.start(cmd, {"BOXFISH_PORT": str(port)}, Path(tmp) / "log")
                ready.append(buildah.wait_ready(url, proc))
                if core is None:
                    r = httpx.post(url + "/v1/analyses?wait=10", timeout=30, json={
                        "game": "dots-and-boxes", "width": 5, "height": 5, "time_ms": 1000})
                    core = r.json()["result"]["core"]
                buildah.stop(marker)
        finally:
            buildah.stop(marker)
            container.remove()
            buildah.remove_image(tag)
    table(["what", "figure"], [
        ["build, cold (--no-cache)", f"{cold:.1f} s"],
        ["build, cached", f"{cached:.1f} s"],
        ["image size", f"{size / 2**20:.0f} MiB"],
        [f"start to ready /readyz (median of {len(ready)})",
         f"{statistics.median(ready):.1f} s (" + ", ".join(f"{s:.1f}" for s in ready) + ")"],
        ["analysis core", core],
    ])
    return 0


if __name__ == "__main__":
    sys.exit(main())
