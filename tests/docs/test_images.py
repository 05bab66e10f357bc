"""The images the docs show are the console screenshots the browser tests take.

Every image a page (README.md, docs/**/*.md) shows is a PNG in docs/images/, and its name is one
of DOCS_SCREENSHOTS, which names the browser test that writes it on every run; so a screenshot
in the docs is never older than the console page it shows was at its last browser run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.console import DOCS_IMAGES, DOCS_SCREENSHOTS, docs_screenshot
from tests.support.docs import ROOT, images, pages

SHOWN = [(page, image) for page in pages() for image in images(page)]


def test_the_console_and_tenants_pages_show_their_screenshots() -> None:
    assert "images/console-skillbook.png" in images("docs/console.md")
    assert "images/console-tenants.png" in images("docs/tenants.md")


@pytest.mark.parametrize(("page", "image"), SHOWN, ids=[f"{page}:{image}" for page, image in SHOWN])
def test_every_image_a_page_shows_is_a_png_a_browser_test_writes(page: str, image: str) -> None:
    path = ((ROOT / page).parent / image).resolve()
    assert path.parent == DOCS_IMAGES, f"{page} shows {image}, which is not in docs/images/"
    assert path.name in DOCS_SCREENSHOTS, f"{page} shows {image}, which no browser test writes"
    assert path.is_file(), f"{page} shows {image}, which is missing: run pytest -m browser tests/console"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{image} is not a PNG"


@pytest.mark.parametrize("name", sorted(DOCS_SCREENSHOTS))
def test_each_docs_screenshot_is_written_by_the_browser_test_named_for_it(name: str) -> None:
    test = Path(ROOT / DOCS_SCREENSHOTS[name]).read_text(encoding="utf-8")
    assert f'docs_screenshot("{name}")' in test
    assert "@pytest.mark.browser" in test
    assert docs_screenshot(name) == DOCS_IMAGES / name


def test_docs_images_holds_only_the_screenshots() -> None:
    assert {path.name for path in DOCS_IMAGES.iterdir()} == set(DOCS_SCREENSHOTS)
