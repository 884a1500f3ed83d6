"""The installed distribution: one namespace, ``boxfish``, and nothing else at the top level."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """``pip install .`` (not editable, no dependencies) of a copy of the source tree (so the
    build leaves nothing in the checkout) into a fresh target folder."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "setup.py", "README.md", "openapi.yaml"):
        shutil.copy(ROOT / name, source / name)
    for name in ("engine", "service", "workers", "client"):
        # (without the checkout's own build of the compiled core: pip builds its own)
        shutil.copytree(ROOT / name, source / name, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    target = tmp_path_factory.mktemp("site")
    # verbose: pip shows the build backend's output, whose warnings are checked below
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--verbose", "--no-deps", "--no-compile",
         "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    BUILD_OUTPUT.append(proc.stdout + proc.stderr)
    return target


#: What the build of ``installed`` printed.
BUILD_OUTPUT: list[str] = []


def test_the_build_warns_of_no_data_folder_outside_the_packages(installed):
    """Each folder of package data (templates, static files, weights) is a package of its
    own: setuptools warned, some 60 lines a folder, at every install, of a folder with data
    that is absent from ``packages``."""
    output = BUILD_OUTPUT[-1]
    assert "Successfully installed boxfish" in output  # the verbose output is the build's
    for warning in ("is absent from the `packages` configuration", "Package would be ignored",
                    "BuildBackendWarning"):
        assert warning not in output, output[output.find(warning) - 500:][:2000]


def _python(target: Path, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` seeing only the fresh install and the dependencies: ``-S`` skips the
    site hooks, so this checkout's editable install is not on the path."""
    deps = sysconfig.get_paths()["purelib"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(target), deps])
    return subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          env=env, cwd=target, timeout=120)


def test_only_boxfish_lands_at_the_top_level(installed):
    names = {p.name for p in installed.iterdir()}
    packages = {n for n in names if not n.endswith(".dist-info") and n != "bin"}
    assert packages == {"boxfish"}
    assert not (installed / "boxfish" / "__init__.py").exists()  # a namespace, nothing more
    assert (installed / "boxfish" / "service" / "http" / "openapi.yaml").is_file()


@pytest.mark.parametrize("name", ["engine", "service", "workers", "client", "tests", "bench"])
def test_the_old_top_level_names_are_not_importable(installed, name):
    proc = _python(installed, f"import {name}")
    assert proc.returncode != 0
    assert f"No module named '{name}'" in proc.stderr


def test_the_namespace_imports(installed):
    proc = _python(installed, (
        "import boxfish.engine, boxfish.service, boxfish.workers, boxfish.client\n"
        "import boxfish.service.http.app, boxfish.workers.analysis_job, boxfish.engine.cli\n"
        "print(boxfish.engine.__file__)\n"
        "print(boxfish.service.http.app.find_openapi())"))
    assert proc.returncode == 0, proc.stderr
    engine_file, openapi = proc.stdout.split()
    assert Path(engine_file).is_relative_to(installed)
    assert Path(openapi).is_relative_to(installed)


def test_the_installed_package_serves_the_pages(installed):
    """The templates and static files are package data: the installed app serves them."""
    proc = _python(installed, (
        "import fakeredis\n"
        "from boxfish.service.http.app import create_app\n"
        "from boxfish.service.config import Settings\n"
        "from boxfish.service.store.recorder import InMemoryRecorder\n"
        "app = create_app(Settings(rate_limit_enabled=False), connection=fakeredis.FakeRedis(),"
        " recorder=InMemoryRecorder())\n"
        "client = app.test_client()\n"
        "for path in ('/', '/static/app.js', '/static/style.css', '/board.css'):\n"
        "    resp = client.get(path)\n"
        "    print(path, resp.status_code, resp.mimetype, len(resp.data))\n"))
    assert proc.returncode == 0, proc.stderr
    lines = [line.split() for line in proc.stdout.splitlines()]
    assert [(path, status) for path, status, _, _ in lines] == [
        ("/", "200"), ("/static/app.js", "200"), ("/static/style.css", "200"),
        ("/board.css", "200")]
    assert lines[0][2] == "text/html" and all(int(size) > 500 for *_, size in lines)


def test_the_install_builds_the_compiled_core(installed):
    """``pip install .`` compiles the Dots search's C core into the package, and analyses
    use it."""
    proc = _python(installed, (
        "from boxfish.engine.dots.search import compiled\n"
        "from boxfish.engine.dots.search.driver import analyse_position\n"
        "print(compiled._core.__file__)\n"
        "a = analyse_position(3, 3, 0, multipv=1, solve=True)\n"
        "print(a.core, a.value, a.nodes)"))
    assert proc.returncode == 0, proc.stderr
    core_file, ran = proc.stdout.strip().split("\n")
    assert Path(core_file).is_relative_to(installed / "boxfish" / "engine" / "dots")
    assert ran == "c -3 79634"


def test_the_client_imports_nothing_of_the_service(installed):
    """``boxfish.client`` is what a bot author installs: importing it loads no Flask, Redis,
    RQ or service module."""
    proc = _python(installed, (
        "import sys\n"
        "import boxfish.client, boxfish.client.bot\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'redis', 'rq')\n"
        "             or m.startswith(('boxfish.service', 'boxfish.workers'))))"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
