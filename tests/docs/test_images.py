"""The images the docs show are the console screenshots the browser tests take.

Every image a page (README.md, docs/**/*.md) shows is a PNG in docs/images/, and its name is one
of DOCS_SCREENSHOTS, which names the browser test that takes it (and writes it there with
ACE_DOCS_SCREENSHOTS=1, as `make docs-screenshots` runs them).
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
    assert path.is_file(), f"{page} shows {image}, which is missing: run make docs-screenshots"
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"), f"{image} is not a PNG"


@pytest.mark.parametrize("name", sorted(DOCS_SCREENSHOTS))
def test_each_docs_screenshot_is_written_by_the_browser_test_named_for_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    test = Path(ROOT / DOCS_SCREENSHOTS[name]).read_text(encoding="utf-8")
    assert f'docs_screenshot("{name}")' in test
    assert "@pytest.mark.browser" in test
    monkeypatch.setenv("ACE_DOCS_SCREENSHOTS", "1")
    assert docs_screenshot(name) == DOCS_IMAGES / name


def test_a_test_run_leaves_the_tracked_screenshots_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACE_DOCS_SCREENSHOTS", raising=False)
    assert all(docs_screenshot(name).parent != DOCS_IMAGES for name in DOCS_SCREENSHOTS)


def test_make_docs_screenshots_runs_every_test_that_takes_one() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile[makefile.index("docs-screenshots:") :].split("\n\n", 1)[0]
    assert "ACE_DOCS_SCREENSHOTS=1" in recipe
    assert all(test in recipe for test in set(DOCS_SCREENSHOTS.values()))


def test_docs_images_holds_only_the_screenshots() -> None:
    assert {path.name for path in DOCS_IMAGES.iterdir()} == set(DOCS_SCREENSHOTS)
