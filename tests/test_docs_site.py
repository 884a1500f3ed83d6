"""The docs site builds: ``mkdocs build --strict`` (broken links and anchors, pages left out of
the nav and a missing snippet all fail it) into a temporary folder, offline, with the API
reference rendered from the repository's own ``openapi.yaml``; every page is in the nav; the
README's links resolve. The build time is printed and kept in
``test-artifacts/docs/build-time.txt`` (or ``$BOXFISH_TEST_ARTIFACTS/docs/``)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
#: The longest the build may take on the 2-core test machine (it takes a few seconds).
BUILD_LIMIT_S = 120


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built from another folder than the checkout (no path depends on the cwd)."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         str(ROOT / "mkdocs.yml"), "--site-dir", str(out)],
        cwd=out.parent, env=env, capture_output=True, text=True, timeout=BUILD_LIMIT_S)
    seconds = time.monotonic() - start
    print(f"mkdocs build --strict: {seconds:.1f} s")
    folder = Path(os.environ.get("BOXFISH_TEST_ARTIFACTS") or ROOT / "test-artifacts") / "docs"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build-time.txt").write_text(f"mkdocs build --strict: {seconds:.2f} s\n")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return out


def built(site: Path, page: str) -> Path:
    """The HTML file that the page ``page`` (relative to docs/) is built into."""
    stem = page.removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


def text_of(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text()))


def ids_of(path: Path) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', path.read_text()))


class _Loader(yaml.SafeLoader):
    """mkdocs.yml with its tags (``!relative``) read as plain values."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def nav_pages() -> list[str]:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)
    pages: list[str] = []

    def walk(item) -> None:
        if isinstance(item, str):
            pages.append(item)
        elif isinstance(item, list):
            for x in item:
                walk(x)
        elif isinstance(item, dict):
            for x in item.values():
                walk(x)

    walk(config["nav"])
    return pages


def test_the_api_reference_renders_every_path_of_openapi(site):
    spec = yaml.safe_load((ROOT / "openapi.yaml").read_text())
    text = text_of(built(site, "api-reference.md"))
    assert {"/v1/games", "/v1/games/{id}/moves", "/v1/analyses"} <= set(spec["paths"])
    missing = [path for path in spec["paths"] if path not in text]
    assert not missing, missing
    for method in ("GET", "POST", "DELETE"):
        assert f'class="http-{method.lower()}"' in built(site, "api-reference.md").read_text()


def test_the_compose_page_shows_the_shipped_compose_file(site):
    compose = (ROOT / "deploy" / "compose.yaml").read_text().strip()
    assert compose in text_of(built(site, "compose.md"))


def test_every_page_is_in_the_nav_once(site):
    pages = nav_pages()
    assert len(pages) == len(set(pages))
    files = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert set(pages) == files
    for page in pages:
        assert built(site, page).is_file(), page


def _slug(heading: str) -> str:
    """Python-Markdown's default slug of a heading, as GitHub and MkDocs make it here."""
    text = re.sub(r"[`*_\[\]]|\(.*?\)", "", heading).strip().lower()
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", text))


def test_the_readme_links_resolve_and_reach_every_page(site):
    readme = README.read_text()
    links = re.findall(r"\]\(([^)\s]+)\)", readme)
    headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", readme, flags=re.M)}
    reached = set()
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        target, _, anchor = link.partition("#")
        if not target:
            assert anchor in headings, link
            continue
        assert (ROOT / target).exists(), link
        if target.startswith("docs/") and target.endswith(".md"):
            page = target.removeprefix("docs/")
            reached.add(page)
            if anchor:
                assert anchor in ids_of(built(site, page)), link
    assert set(nav_pages()) <= reached, sorted(set(nav_pages()) - reached)
