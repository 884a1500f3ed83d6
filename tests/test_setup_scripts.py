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
