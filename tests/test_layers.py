"""The layer rule of ``service/__init__.py``, checked on the source: every import (at module
level, in a function, under ``TYPE_CHECKING``) of every module of engine/, service/, workers/
and client/, relative imports resolved to the ``boxfish.*`` names they stand for."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("engine", "service", "workers", "client")

#: Importing one of these is speaking HTTP, or Redis.
HTTP = frozenset({"flask", "werkzeug", "gunicorn"})
REDIS = frozenset({"redis", "rq"})

#: What of the service each of its folders (and shared module) may import besides itself.
SERVICE = "boxfish.service"
MAY_IMPORT = {
    "runtime": {"http", "application", "store", "pictures", "config", "errors"},
    "http": {"application", "store", "pictures", "config", "errors"},
    "application": {"store", "config", "errors"},
    "store": {"config", "errors"},
    "pictures": set(),
    "config": set(),
    "errors": set(),
}


@dataclass(frozen=True)
class Import:
    path: str  # the file, relative to the repository
    line: int
    module: str  # the importing module, boxfish.<...>
    target: str  # what it imports, absolute: flask.Flask, boxfish.service.store.keys, ...

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.module} imports {self.target}"


def module_name(relative: Path) -> str:
    """``service/http/app.py`` -> ``boxfish.service.http.app`` (a package: its folder)."""
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["boxfish", *parts])


def imports_of(path: str, module: str, source: str) -> Iterator[Import]:
    """Every import in ``source``, the module ``module`` (a package if ``path`` is an
    ``__init__.py``), with each name imported from a module as ``module.name``."""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, module, alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            for alias in node.names:
                name = base if alias.name == "*" else f"{base}.{alias.name}"
                yield Import(path, node.lineno, module, name.lstrip("."))


def source_imports() -> list[Import]:
    found = []
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            relative = file.relative_to(ROOT)
            found += imports_of(str(relative), module_name(relative), file.read_text())
    return found


def top(name: str) -> str:
    return name.split(".")[0]


def layer(name: str) -> str | None:
    """The service folder (or shared module) of a ``boxfish.service`` name, else None."""
    parts = name.split(".")
    if parts[:2] != ["boxfish", "service"] or len(parts) < 3:
        return None
    return parts[2]


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def folder(imp: Import) -> str:
    return str(Path(imp.path).parent)


# The rules, each a function from all the imports to the messages of those that break it.

def only_http_speaks_http(found: Iterable[Import]) -> list[str]:
    return [f"{imp}: only {SERVICE}.http speaks HTTP" for imp in found
            if top(imp.target) in HTTP and layer(imp.module) != "http"]


def no_folder_speaks_http_and_redis(found: Iterable[Import]) -> list[str]:
    http: dict[str, list[Import]] = {}
    redis: dict[str, list[Import]] = {}
    for imp in found:
        if top(imp.target) in HTTP:
            http.setdefault(folder(imp), []).append(imp)
        elif top(imp.target) in REDIS:
            redis.setdefault(folder(imp), []).append(imp)

    def speakers(found: list[Import]) -> str:
        modules = sorted({imp.module.rpartition(".")[2] for imp in found})
        return f"{', '.join(modules)}; first {found[0]}"

    return [f"the folder {name}/ speaks HTTP ({speakers(http[name])}) and Redis "
            f"({speakers(redis[name])})" for name in sorted(http.keys() & redis.keys())]


def service_layers(found: Iterable[Import]) -> list[str]:
    out = []
    for imp in found:
        source, target = layer(imp.module), layer(imp.target)
        if source is None or target is None or source == target:
            continue
        if target not in MAY_IMPORT[source]:
            allowed = ", ".join(sorted(MAY_IMPORT[source])) or "nothing of the service"
            out.append(f"{imp}: {SERVICE}.{source} may import {allowed}")
    return out


def http_and_shared_speak_no_redis(found: Iterable[Import]) -> list[str]:
    return [f"{imp}: {SERVICE}.{layer(imp.module)} speaks no Redis" for imp in found
            if layer(imp.module) in ("config", "errors", "pictures", "http")
            and top(imp.target) in REDIS]


def workers_import_no_http(found: Iterable[Import]) -> list[str]:
    return [f"{imp}: the workers never import {SERVICE}.http" for imp in found
            if within(imp.module, "boxfish.workers") and layer(imp.target) == "http"]


def engine_imports_no_service(found: Iterable[Import]) -> list[str]:
    others = ("boxfish.service", "boxfish.workers", "boxfish.client")
    return [f"{imp}: the engine imports nothing of {', '.join(others)}" for imp in found
            if within(imp.module, "boxfish.engine")
            and any(within(imp.target, other) for other in others)]


def client_imports_no_service(found: Iterable[Import]) -> list[str]:
    others = ("boxfish.service", "boxfish.workers")
    return [f"{imp}: the client imports nothing of the service, the workers, Redis or RQ"
            for imp in found if within(imp.module, "boxfish.client")
            and (any(within(imp.target, other) for other in others)
                 or top(imp.target) in REDIS)]


RULES = [only_http_speaks_http, no_folder_speaks_http_and_redis, service_layers,
         http_and_shared_speak_no_redis, workers_import_no_http, engine_imports_no_service,
         client_imports_no_service]


@pytest.fixture(scope="module")
def found() -> list[Import]:
    return source_imports()


def test_every_package_is_read(found):
    modules = {imp.module for imp in found}
    for package in ("engine.dots.search.driver", "service.http.app", "service.store.recorder",
                    "service.application.games", "service.runtime.cli", "workers.worker",
                    "client.client"):
        assert f"boxfish.{package}" in modules
    # Relative imports are resolved, in functions too.
    targets = {(imp.module, imp.target) for imp in found}
    assert ("boxfish.service.http.app", "boxfish.service.http.views.ops") in targets
    assert ("boxfish.service.runtime.cli", "boxfish.service.store.connections") in targets


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
def test_the_rule_holds(found, rule):
    broken = rule(found)
    assert not broken, "\n".join(broken)


FORBIDDEN = [
    ("service/http/views/ops.py", "def f():\n    import redis\n",
     "boxfish.service.http.views.ops imports redis"),
    ("service/http/sse.py", "from rq import Queue\n", "imports rq.Queue"),
    ("service/store/keys.py", "import flask\n", "boxfish.service.store.keys imports flask"),
    ("service/store/keys.py", "from ..http.problems import Problem\n",
     "imports boxfish.service.http.problems.Problem"),
    ("service/application/games.py", "from ..runtime import cli\n",
     "imports boxfish.service.runtime.cli"),
    ("service/errors.py", "from .store.connections import ConfigurationError\n",
     "boxfish.service.errors imports boxfish.service.store.connections"),
    ("service/pictures/svg.py", "from werkzeug.exceptions import NotFound\n",
     "imports werkzeug.exceptions.NotFound"),
    ("workers/worker.py", "from boxfish.service.http.app import create_app\n",
     "imports boxfish.service.http.app.create_app"),
    ("engine/dots/game.py", "def f():\n    from boxfish.service import config\n",
     "imports boxfish.service.config"),
    ("client/client.py", "import redis\n", "boxfish.client.client imports redis"),
]


@pytest.mark.parametrize(("path", "source", "named"), FORBIDDEN,
                         ids=[f"{p}:{s.split()[-1]}" for p, s, _ in FORBIDDEN])
def test_a_forbidden_import_is_named(found, path, source, named):
    """The same check on the repository with one import added: it fails, naming the module
    and what it imports."""
    added = list(imports_of(path, module_name(Path(path)), source))
    broken = [message for rule in RULES for message in rule([*found, *added])]
    assert broken and all(path in message for message in broken), broken
    assert any(named in message for message in broken), broken
