"""The console's API is documented: GET /api lists every endpoint, and README's table says the same."""

from __future__ import annotations

import re
from pathlib import Path

from starlette.routing import Route

from ace_workers.console.app import api_endpoints
from tests.support.console import RunningConsole

README = Path(__file__).resolve().parents[2] / "README.md"


def endpoint_table(endpoints: list[dict[str, str]]) -> str:
    """The README's table of API endpoints, as it should read."""
    rows = ["| method | path | answers |", "|---|---|---|"]
    rows += [f"| {e['method']} | `{e['path']}` | {e['summary']} |" for e in endpoints]
    return "\n".join(rows)


def readme_table() -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"^\| method \| path \| answers \|\n(?:\|.*\n)+", text, re.MULTILINE)
    assert found is not None, "README: no '| method | path | answers |' table"
    return found.group(0).strip()


def test_get_api_lists_every_api_route_with_a_summary(console: RunningConsole) -> None:
    with console.client() as client:
        listed = client.get("/api").json()["endpoints"]
    routes = {
        (method, route.path)
        for route in console.app.routes
        if isinstance(route, Route) and route.path.startswith("/api/")
        for method in (route.methods or set()) - {"HEAD"}
    }
    assert {(e["method"], e["path"]) for e in listed} == routes
    assert all(e["summary"] for e in listed), [e["path"] for e in listed if not e["summary"]]


# GET routes that only send the browser on (no data of their own), and the probe.
NOT_PAGES = {"/", "/healthz", "/skillbooks/{name}/labels/new"}


def test_every_page_has_its_api_twin(console: RunningConsole) -> None:
    paths = {route.path for route in console.app.routes if isinstance(route, Route)}
    pages = {p for p in paths if not p.startswith("/api") and p not in NOT_PAGES}
    assert pages
    assert {p for p in pages if f"/api{p}" not in paths} == set()


def test_the_readme_table_is_the_api_as_served(console: RunningConsole) -> None:
    expected = endpoint_table(api_endpoints(console.app.routes))
    assert readme_table() == expected, f"README's API table should read:\n{expected}"


def test_the_images_the_readme_shows_are_in_the_repository() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README.read_text(encoding="utf-8"))
    assert "docs/console-skillbook.png" in images
    for image in images:
        assert (README.parent / image).read_bytes().startswith(b"\x89PNG"), image
