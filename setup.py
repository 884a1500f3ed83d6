"""Builds the optional compiled core of the Dots-and-Boxes search (everything else is in
pyproject.toml).

The extension is optional: when it cannot be built (no C compiler, no Python headers, a
compiler without 128-bit integers), the install goes on without it, prints why, and the engine
uses its pure-Python search (``Analysis.core`` then says ``"python"``). With the environment
variable ``BOXFISH_REQUIRE_CORE=1`` (the container image's build sets it) a core that does not
compile fails the install instead.
"""

import glob
import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

WARNING = """
************************************************************************************
WARNING: boxfish's compiled Dots-and-Boxes core could not be built ({error}).
Boxfish still works: it falls back to the pure-Python search, which is 30-100x slower
(Analysis.core reports "python"). To get the compiled core, install a C compiler and
the Python headers (Debian: apt-get install gcc python3-dev) and reinstall.
************************************************************************************
"""


REQUIRED = os.environ.get("BOXFISH_REQUIRE_CORE", "") not in ("", "0")

# The core's units (engine/dots/search/core/) compile as one translation unit, module.c, which
# includes the others (why: module.c).
CORE = "engine/dots/search/core"


class OptionalBuildExt(build_ext):
    """build_ext that warns instead of failing when the extension does not compile (and
    fails, when ``BOXFISH_REQUIRE_CORE`` is set)."""

    def run(self):
        try:
            super().run()
        except Exception as exc:  # any build failure means "fall back"
            self._fall_back(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._fall_back(exc)

    @staticmethod
    def _fall_back(exc: Exception) -> None:
        if REQUIRED:
            raise SystemExit(f"boxfish: the compiled core is required "
                             f"(BOXFISH_REQUIRE_CORE) but did not build: {exc}")
        print(WARNING.format(error=exc), file=sys.stderr)


setup(
    ext_modules=[
        Extension(
            "boxfish.engine.dots.search._core",
            sources=[f"{CORE}/module.c"],
            depends=sorted(glob.glob(f"{CORE}/*.[ch]")),
            extra_compile_args=["-O3", "-std=gnu11", "-pthread"],
            extra_link_args=["-pthread"],
            optional=not REQUIRED,
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
