"""The configuration page (docs/configuration.md) lists every setting under its environment
name, and lists nothing that is not a setting."""

from __future__ import annotations

from pathlib import Path

from boxfish.service.config import Settings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def environment_names() -> set[str]:
    """Every environment variable :class:`Settings` reads (``redis_url`` is ``REDIS_URL``)."""
    return {"REDIS_URL" if field == "redis_url" else f"BOXFISH_{field.upper()}"
            for field in Settings.model_fields}


def listed() -> list[str]:
    """The first column of the page's table, in order."""
    return [line.split("`")[1] for line in PAGE.read_text().splitlines()
            if line.startswith("| `")]


def test_every_setting_is_on_the_configuration_page():
    missing = sorted(environment_names() - set(listed()))
    assert not missing, f"add these to docs/configuration.md: {missing}"


def test_every_name_on_the_configuration_page_is_a_setting():
    names = listed()
    unknown = sorted(set(names) - environment_names())
    assert not unknown, f"docs/configuration.md lists what is no setting: {unknown}"
    assert len(names) == len(set(names)), "a setting is listed twice"
