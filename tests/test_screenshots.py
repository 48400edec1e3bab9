"""The docs' pictures: `make screenshots` (scripts/screenshots.sh) copies each listed screenshot of the real-browser
tests into docs/images/; every picture there is on the list, and a page (or the README) shows it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "screenshots.sh"
IMAGES = ROOT / "docs" / "images"


def listed() -> list[str]:
    """The names in the script's SHOTS=( ... ) list."""
    block = re.search(r"^SHOTS=\((.*?)^\)", SCRIPT.read_text(), re.S | re.M)
    assert block, "scripts/screenshots.sh has no SHOTS=( ... ) list"
    return [line.split("#")[0].strip() for line in block[1].splitlines() if line.split("#")[0].strip()]


def test_the_list_and_the_folder_agree() -> None:
    assert sorted(listed()) == sorted(p.stem for p in IMAGES.glob("*.png"))


def test_each_picture_is_shown_on_a_page_and_each_shown_picture_exists() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    shown: set[str] = set()
    for page in pages:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+\.png)\)", page.read_text(encoding="utf-8")):
            path = (page.parent / target).resolve()
            assert path.is_file(), f"{page.relative_to(ROOT)} shows {target}, which does not exist"
            shown.add(path.stem)
    assert set(listed()) <= shown, f"no page shows {sorted(set(listed()) - shown)}"


def test_the_browser_tests_take_every_listed_picture() -> None:
    sources = "".join(p.read_text() for p in (ROOT / "tests" / "browser").glob("*.py"))
    for name in listed():
        assert f'"{name}"' in sources or f"{name}.png" in sources, f"no browser test takes {name}"
