"""RQ job functions and the worker process of Boxfish (``boxfish worker``).

RQ stores a job's function (and its success and failure callbacks) by import path. Jobs that a
version before the modules' renames (issue 24) queued or scheduled name the old paths, so those
paths stay importable, as aliases of the renamed modules, loaded only when such a job is run:

=================================  ==========================================
``boxfish.workers.analysis``       :mod:`boxfish.workers.analysis_job`
``boxfish.workers.engine_seat``    :mod:`boxfish.workers.engine_move_job`
``boxfish.workers.webhooks``       :mod:`boxfish.workers.webhook_delivery`
=================================  ==========================================
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: old module path -> the module it was renamed to (see the docstring)
RENAMED = {
    f"{__name__}.analysis": f"{__name__}.analysis_job",
    f"{__name__}.engine_seat": f"{__name__}.engine_move_job",
    f"{__name__}.webhooks": f"{__name__}.webhook_delivery",
}


class _RenamedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old path of :data:`RENAMED` as the very module of its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in RENAMED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(RENAMED[spec.name])

    def exec_module(self, module) -> None:
        pass  # the renamed module ran when it was imported


if not any(isinstance(f, _RenamedFinder) for f in sys.meta_path):
    sys.meta_path.append(_RenamedFinder())
