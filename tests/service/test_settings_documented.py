"""Every setting is listed in the README's Configuration table, under its environment name."""

from __future__ import annotations

from pathlib import Path

from boxfish.service.config import Settings

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_setting_is_in_the_readme():
    table = [line for line in README.read_text().splitlines() if line.startswith("| `")]
    names = {line.split("`")[1] for line in table}
    missing = [f"BOXFISH_{field.upper()}" for field in Settings.model_fields
               if field != "redis_url" and f"BOXFISH_{field.upper()}" not in names]
    assert not missing, f"add these to the README's Configuration table: {missing}"
    assert "REDIS_URL" in names
