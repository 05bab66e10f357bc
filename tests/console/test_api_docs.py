"""The console's API is documented: GET /api lists every endpoint, and docs/console.md's table agrees."""

from __future__ import annotations

import re

from starlette.routing import Route

from ace_workers.console.app import api_endpoints
from ace_workers.console.areas import NAVIGATION
from tests.support.console import RunningConsole
from tests.support.docs import section_text

PAGE, SECTION = "docs/console.md", "## API"


def endpoint_table(endpoints: list[dict[str, str]]) -> str:
    """The console page's table of API endpoints, as it should read."""
    rows = ["| method | path | answers |", "|---|---|---|"]
    rows += [f"| {e['method']} | `{e['path']}` | {e['summary']} |" for e in endpoints]
    return "\n".join(rows)


def page_table() -> str:
    text = section_text(PAGE, SECTION)
    found = re.search(r"^\| method \| path \| answers \|\n(?:\|.*\n)+", text, re.MULTILINE)
    assert found is not None, f"{PAGE} {SECTION}: no '| method | path | answers |' table"
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


def test_the_console_pages_table_is_the_api_as_served(console: RunningConsole) -> None:
    expected = endpoint_table(api_endpoints(console.app.routes))
    assert page_table() == expected, f"{PAGE}'s API table should read:\n{expected}"


def test_the_navigation_is_the_areas_links_and_each_opens_a_page(console: RunningConsole) -> None:
    paths = {route.path for route in console.app.routes if isinstance(route, Route)}
    assert [link.path for link in NAVIGATION] == [
        "/skillbooks",
        "/batches",
        "/dead-letters",
        "/fleet",
        "/tenants",
        "/audit",
        "/forget",
    ]
    assert {link.path for link in NAVIGATION} <= paths
    with console.client() as client:
        shown = client.get("/fleet")
    assert shown.status_code == 200
    nav = shown.text[shown.text.index("<nav>") : shown.text.index("</nav>")]
    assert re.findall(r'<a href="([^"]+)"', nav) == [link.path for link in NAVIGATION]
    assert '<a href="/fleet" class="active">Fleet</a>' in nav
