"""Build the repository's ``Dockerfile`` with buildah and run the image's own command, for the
image tests and ``bench/image_bench.py``.

No image registry is reachable from the machines these run on, so the base images come from
Debian's packages: :func:`base_images` makes them with ``mmdebstrap`` once (kept in buildah's
storage under a tag that names their package lists) and the build gets them through the
Dockerfile's ``BUILD_IMAGE`` and ``BASE_IMAGE`` arguments. Nor is PyPI reachable from inside a
build, so :func:`build_context` puts a wheelhouse, made on the host, into the context and the
build takes it through ``WHEELHOUSE``. The Dockerfile itself is used unchanged.

``buildah run --isolation chroot`` shares the host's network, so a container's API is reached
on the loopback port given to it as ``BOXFISH_PORT``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
#: Debian packages of the runtime base (what python:3.11-slim offers: python3 and venv) and
#: of the build base (the same plus a compiler and the Python headers).
RUNTIME_PACKAGES = ("python3", "python3-venv")
BUILD_PACKAGES = RUNTIME_PACKAGES + ("python3-dev", "gcc", "libc6-dev", "make")
#: Beyond the project's own dependencies: the build's isolated setuptools, and async-timeout,
#: which redis requires on Python < 3.11.3 (bookworm's is 3.11.2) but the host may not.
EXTRA_WHEELS = ("setuptools", "wheel", "async-timeout")
TOOLS = ("buildah", "mmdebstrap")


class ImageToolMissing(RuntimeError):
    """buildah or mmdebstrap is not installed (``scripts/test`` installs both)."""


def check_tools() -> None:
    """Raise :class:`ImageToolMissing` naming what is missing."""
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        raise ImageToolMissing(
            f"{' and '.join(missing)} not found: the image tests build the Dockerfile with "
            f"Debian's buildah and mmdebstrap (scripts/test installs them as root or through "
            f"sudo; otherwise apt-get install {' '.join(TOOLS)})")


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def image_exists(name: str) -> bool:
    return subprocess.run(["buildah", "inspect", "--type", "image", name],
                          capture_output=True).returncode == 0


def _base_tag(kind: str, packages: tuple[str, ...]) -> str:
    digest = hashlib.sha256(" ".join((SUITE,) + packages).encode()).hexdigest()[:12]
    return f"localhost/boxfish-test-base:{kind}-{digest}"


def _make_base(tag: str, packages: tuple[str, ...], workdir: Path) -> None:
    tarball = workdir / f"{tag.rsplit(':', 1)[1]}.tar"
    _run(["mmdebstrap", "--variant=minbase", "--include=" + ",".join(packages),
          "--aptopt=Acquire::Languages \"none\"",
          "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
          "--dpkgopt=path-exclude=/usr/share/locale/*",
          "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*",
          SUITE, str(tarball), MIRROR])
    container = _run(["buildah", "from", "scratch"]).stdout.strip()
    try:
        _run(["buildah", "add", "--quiet", container, str(tarball), "/"])
        _run(["buildah", "config", "--cmd", "/bin/bash", container])
        _run(["buildah", "commit", "--quiet", container, tag])
    finally:
        subprocess.run(["buildah", "rm", container], capture_output=True)
        tarball.unlink(missing_ok=True)


def base_images() -> dict[str, str]:
    """The build arguments ``BUILD_IMAGE`` and ``BASE_IMAGE``: Debian images made with
    mmdebstrap, once per package list (both at once, about a minute)."""
    wanted = {"BUILD_IMAGE": _base_tag("build", BUILD_PACKAGES),
              "BASE_IMAGE": _base_tag("runtime", RUNTIME_PACKAGES)}
    packages = {"BUILD_IMAGE": BUILD_PACKAGES, "BASE_IMAGE": RUNTIME_PACKAGES}
    todo = [arg for arg, tag in wanted.items() if not image_exists(tag)]
    if todo:
        from concurrent.futures import ThreadPoolExecutor
        with tempfile.TemporaryDirectory(prefix="boxfish-base-") as tmp, \
                ThreadPoolExecutor(len(todo)) as pool:
            for f in [pool.submit(_make_base, wanted[a], packages[a], Path(tmp)) for a in todo]:
                f.result()
    return wanted


def _dependencies() -> list[str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["dependencies"]


def build_context(dest: Path, *, edit=None) -> Path:
    """Fill ``dest`` with the repository's files as they are in the work tree (those git
    tracks or would track) and a ``wheelhouse/`` of every dependency's wheel. ``edit(dest)``,
    when given, may change the copy before the wheelhouse is made."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                  cwd=REPO).stdout.split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if edit is not None:
        edit(dest)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir",
          str(dest / "wheelhouse"), *_dependencies(), *EXTRA_WHEELS])
    return dest


def build(context: Path, tag: str, *, no_cache: bool = False) -> tuple[float, str]:
    """Build ``context``'s Dockerfile as ``tag`` with the local base images and the
    wheelhouse. Returns the seconds it took and buildah's output; raises
    ``subprocess.CalledProcessError`` (with the output) when the build fails."""
    args = {**base_images(), "WHEELHOUSE": "wheelhouse"}
    cmd = ["buildah", "bud", "--isolation", "chroot", "--format", "docker", "--layers",
           "--tag", tag, *(["--no-cache"] if no_cache else [])]
    for k, v in args.items():
        cmd += ["--build-arg", f"{k}={v}"]
    start = time.monotonic()
    done = subprocess.run(cmd + ["--file", "Dockerfile", "."], cwd=context, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if done.returncode:
        raise subprocess.CalledProcessError(done.returncode, cmd, output=done.stdout)
    return time.monotonic() - start, done.stdout


def config(tag: str) -> dict:
    """The image's Docker configuration (``Cmd``, ``User``, ``Healthcheck``, ...)."""
    out = _run(["buildah", "inspect", "--type", "image", tag]).stdout
    return json.loads(out)["Docker"]["config"]


def size_bytes(tag: str) -> int:
    """The image's size unpacked: the sum of its layers (as ``docker images`` counts it)."""
    out = _run(["buildah", "inspect", "--type", "image", tag]).stdout
    manifest = json.loads(json.loads(out)["Manifest"])
    return sum(layer["size"] for layer in manifest["layers"])


def remove_image(tag: str) -> None:
    subprocess.run(["buildah", "rmi", "--force", tag], capture_output=True)


def prune() -> None:
    """Remove the untagged images builds leave (the tagged base images stay), so that runs
    do not fill the disk."""
    subprocess.run(["buildah", "rmi", "--prune"], capture_output=True)


class Container:
    """A buildah working container of an image, whose command runs with
    ``buildah run --isolation chroot``. Its volumes (``/data``) are kept between runs, as a
    container's are between restarts."""

    def __init__(self, image: str):
        self.image = image
        self.name = _run(["buildah", "from", "--quiet", image]).stdout.strip()

    def run(self, cmd: list[str], env: dict[str, str] | None = None,
            **kw) -> subprocess.CompletedProcess:
        """Run ``cmd`` in the container to its end."""
        return subprocess.run(self._argv(cmd, env), text=True, capture_output=True, **kw)

    def start(self, cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
        """Start ``cmd`` (the image's own command, say) in the background."""
        with open(log, "ab") as out:
            return subprocess.Popen(self._argv(cmd, env), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)

    def _argv(self, cmd: list[str], env: dict[str, str] | None) -> list[str]:
        argv = ["buildah", "run", "--isolation", "chroot"]
        for k, v in (env or {}).items():
            argv += ["--env", f"{k}={v}"]
        return argv + [self.name, "--"] + cmd

    def remove(self) -> None:
        subprocess.run(["buildah", "rm", self.name], capture_output=True)


def processes_with_env(marker: str) -> list[int]:
    """Pids of the processes whose environment holds ``marker`` (``"BOXFISH_PORT=1234"``):
    those one container run started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if marker.encode() in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def main_process(marker: str) -> int | None:
    """The pid of the image's command itself among :func:`processes_with_env`: the one
    whose parent is not one of them (``buildah run`` does not pass the environment on)."""
    pids = set(processes_with_env(marker))
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid not in pids:
            return pid
    return None


def stop(marker: str, timeout_s: float = 30.0) -> None:
    """Stop a container run as a container runtime does: SIGTERM to the command, then after
    ``timeout_s`` SIGKILL to all it started. (``buildah run`` itself answers SIGTERM with
    SIGKILL, which would orphan the command's children.)"""
    pid = main_process(marker)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while processes_with_env(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in processes_with_env(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def wait_ready(base_url: str, proc: subprocess.Popen, timeout_s: float = 120.0) -> float:
    """Seconds until ``GET /readyz`` answers 200; raises ``RuntimeError`` if the run ends or
    ``timeout_s`` passes first."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if proc.poll() is not None:
            raise RuntimeError(f"the container's command ended with {proc.returncode}")
        try:
            if httpx.get(base_url + "/readyz", timeout=2).status_code == 200:
                return time.monotonic() - start
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{base_url}/readyz not ready in {timeout_s} s")
