"""The container image: the repository's Dockerfile built with buildah and its own command
run, checked from the outside as an operator would (see :mod:`tests.image.buildah` for how
the base images and the wheels get there without a registry).

Without buildah or mmdebstrap these tests fail, naming the packages; they are never skipped.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest

from boxfish.service.runtime.embedded_redis import free_port
from tests.image import buildah

pytestmark = pytest.mark.timeout(900)

MIB = 1024 * 1024
#: The image's size bound: Debian's minimal base with Python is about 170 MiB of it.
MAX_IMAGE_MIB = 400


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    try:
        buildah.check_tools()
    except buildah.ImageToolMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    tag = f"localhost/boxfish-test:{uuid.uuid4().hex[:8]}"
    context = buildah.build_context(tmp_path_factory.mktemp("context"))
    try:
        buildah.build(context, tag)
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"buildah bud failed:\n{exc.output[-4000:]}", pytrace=False)
    yield tag
    buildah.remove_image(tag)
    buildah.prune()


class Served:
    """The image's command running in one working container, on a loopback port."""

    def __init__(self, image: str, log: Path):
        self.config = buildah.config(image)
        self.container = buildah.Container(image)
        self.port = free_port()
        self.marker = f"BOXFISH_PORT={self.port}"
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.ready_s: list[float] = []

    def start(self) -> None:
        proc = self.container.start(self.config["Cmd"], {"BOXFISH_PORT": str(self.port)},
                                    self.log)
        try:
            self.ready_s.append(buildah.wait_ready(self.url, proc))
        except RuntimeError as exc:
            raise AssertionError(f"{exc}; its output:\n{self.log.read_text()[-3000:]}") from exc

    def stop(self) -> None:
        buildah.stop(self.marker)

    def close(self) -> None:
        self.stop()
        self.container.remove()


@pytest.fixture(scope="module")
def served(image, tmp_path_factory):
    s = Served(image, tmp_path_factory.mktemp("run") / "container.log")
    try:
        s.start()
        yield s
    finally:
        s.close()


def test_image_configuration(image, capsys):
    cfg = buildah.config(image)
    assert cfg["User"] == "boxfish"
    assert cfg["Cmd"][:2] == ["boxfish", "serve"]
    assert "/data" in cfg["Volumes"]
    assert "BOXFISH_DATA_DIR=/data" in cfg["Env"]
    assert "/healthz" in " ".join(cfg["Healthcheck"]["Test"])
    size = buildah.size_bytes(image)
    with capsys.disabled():
        print(f"\nimage {image}: {size / MIB:.0f} MiB")
    assert size < MAX_IMAGE_MIB * MIB


def test_image_has_no_compiler(image):
    c = buildah.Container(image)
    try:
        done = c.run(["sh", "-c", "command -v gcc cc || echo none"])
    finally:
        c.remove()
    assert done.stdout.strip() == "none"


def test_served_from_the_outside(served):
    api = httpx.Client(base_url=served.url, timeout=30)
    assert api.get("/healthz").status_code == 200
    ready = api.get("/readyz").json()
    assert ready["status"] == "ready" and ready["workers"] >= 1

    game = api.post("/v1/games", json={"game": "dots-and-boxes", "width": 3, "height": 3})
    assert game.status_code == 201, game.text
    game = game.json()
    moved = api.post(f"/v1/games/{game['id']}/moves", json={"move": [1, 1, 1], "serial": 1},
                     headers={"Authorization": f"Bearer {game['write_token']}"})
    assert moved.status_code == 201, moved.text

    # the longest time the image allows (a 3x3 solve takes a small part of it): the search
    # ends when solved, and a loaded host leaves it time to
    analysis = api.post("/v1/analyses?wait=10", json={
        "game": "dots-and-boxes", "width": 3, "height": 3,
        "moves": [[1, 1, 1]], "time_ms": 10_000})
    assert analysis.status_code in (200, 202), analysis.text
    body = analysis.json()
    deadline = time.monotonic() + 120
    while body["status"] != "finished":  # a 202 after the wait: the worker is slow here
        assert body["status"] in ("queued", "started") and time.monotonic() < deadline, body
        time.sleep(0.2)
        polled = api.get(f"/v1/analyses/{body['id']}")
        assert polled.status_code == 200, polled.text
        body = polled.json()
    assert body["result"]["core"] == "c"
    assert body["result"]["exact"] is True

    board = api.get(f"/v1/games/{game['id']}/board.png")
    assert board.status_code == 200
    assert board.headers["content-type"] == "image/png"
    assert board.content[:8] == b"\x89PNG\r\n\x1a\n"


def test_runs_as_the_non_root_user(served):
    pids = buildah.processes_with_env(served.marker)
    assert pids
    for pid in pids:
        with open(f"/proc/{pid}/status") as f:
            uids = next(line for line in f if line.startswith("Uid:")).split()[1:]
        assert set(uids) == {"10001"}, (pid, uids)


def test_health_check_command_passes_while_served(served):
    test = served.config["Healthcheck"]["Test"]
    assert test[0] == "CMD-SHELL" or test[0] == "CMD"
    cmd = ["sh", "-c", test[1]] if test[0] == "CMD-SHELL" else test[1:]
    done = served.container.run(cmd, env={"BOXFISH_PORT": str(served.port)})
    assert done.returncode == 0, done.stderr


def test_data_survive_a_restart(served, capsys):
    api = httpx.Client(base_url=served.url, timeout=30)
    game = api.post("/v1/games", json={"game": "dots-and-boxes", "width": 2, "height": 2}).json()
    for serial, move in ((1, [1, 1, 1]), (2, [2, 1, 1])):
        r = api.post(f"/v1/games/{game['id']}/moves", json={"move": move, "serial": serial},
                     headers={"Authorization": f"Bearer {game['write_token']}"})
        assert r.status_code == 201, r.text
    before = api.get(f"/v1/games/{game['id']}").json()

    served.stop()
    assert not buildah.processes_with_env(served.marker)
    with pytest.raises(httpx.HTTPError):
        httpx.get(served.url + "/healthz", timeout=2)
    served.start()

    after = httpx.get(f"{served.url}/v1/games/{game['id']}", timeout=30).json()
    assert after["serial"] == 2
    assert after["lines"] == before["lines"]
    moves = httpx.get(f"{served.url}/v1/games/{game['id']}/moves", timeout=30).json()
    assert [m["move"] for m in moves["moves"]] == [[1, 1, 1], [2, 1, 1]]
    with capsys.disabled():
        print("\nimage start to ready /readyz: "
              + ", ".join(f"{s:.1f} s" for s in served.ready_s))


def test_a_core_that_does_not_compile_fails_the_build(tmp_path):
    """The runtime must never ship the pure-Python search: a broken core is a failed build,
    not a warning."""
    def break_core(ctx: Path) -> None:
        core = ctx / "engine" / "dots" / "search" / "core" / "module.c"
        core.write_text("#error this core does not compile\n" + core.read_text())

    try:
        buildah.check_tools()
    except buildah.ImageToolMissing as exc:
        pytest.fail(str(exc), pytrace=False)
    context = buildah.build_context(tmp_path, edit=break_core)
    tag = f"localhost/boxfish-test:broken-{uuid.uuid4().hex[:8]}"
    with pytest.raises(subprocess.CalledProcessError) as failed:
        buildah.build(context, tag)
    buildah.remove_image(tag)
    assert "BOXFISH_REQUIRE_CORE" in failed.value.output
