"""The workers do not load Flask: every module of ``boxfish.workers`` (and the Flask-free
wiring they build the service's parts with) imports without it, each in a fresh interpreter."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import boxfish.workers

WORKER_MODULES = sorted(f"boxfish.workers.{m.name}"
                        for m in pkgutil.iter_modules(boxfish.workers.__path__))


def test_the_workers_package_has_the_modules_checked_below():
    assert "boxfish.workers.worker" in WORKER_MODULES and len(WORKER_MODULES) >= 5


@pytest.mark.parametrize("module", [*WORKER_MODULES, "boxfish.service.application.wiring"])
def test_importing_does_not_import_flask(module):
    code = (f"import sys, {module}\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'werkzeug')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", f"{module} loads {out.stdout.strip()}"
