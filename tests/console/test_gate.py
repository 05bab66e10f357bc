"""The console's gate: credentials, CSRF, read-only, the Host check and the security headers."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from ace_workers.console.access import ConsoleAccess
from ace_workers.console.audit import read_audit
from ace_workers.console.errors import ConsoleSettingError
from ace_workers.console.notices import NOTICES
from ace_workers.distributed.service import Service
from ace_workers.distributed.tenancy import ApiKeys
from tests.support.console import USER, RunningConsole, csrf_of, running_console
from tests.support.servers import PrivateRedis
from tests.support.workers import build_test_service

# A secret of the keys' format that no key has.
UNKNOWN_KEY = "ace_0123abcd_" + "x" * 43


def test_every_page_and_api_refuses_a_request_without_credentials(console: RunningConsole) -> None:
    with console.client(auth=None) as client:
        for path in ("/skillbooks", "/api/skillbooks", "/audit", "/api"):
            response = client.get(path)
            assert response.status_code == 401, path
        assert client.get("/skillbooks").headers["www-authenticate"].startswith("Basic")


def test_a_password_or_token_that_is_no_live_key_is_refused(console: RunningConsole) -> None:
    for secret in ("not-a-key", UNKNOWN_KEY):
        with console.client(auth=(USER, secret)) as client:
            assert client.get("/api/skillbooks").status_code == 401, secret
        with console.client(token=secret) as client:
            assert client.get("/api/skillbooks").status_code == 401, secret


def test_a_key_signs_in_as_basic_auths_password_or_as_a_bearer_token(console: RunningConsole) -> None:
    with console.client() as client:
        names = [book["name"] for book in client.get("/api/skillbooks").json()["skillbooks"]]
    assert names == ["support"]
    # The user name is free: the key's secret alone says who signs in.
    with console.client(auth=(console.ops.id, console.ops.secret)) as client:
        page = client.get("/skillbooks")
    assert page.status_code == 200
    assert console.ops.name in page.text  # the page names who signed in: the key, not the user name
    with console.client(token=console.token) as client:
        assert client.get("/api/skillbooks").status_code == 200


def test_a_revoked_key_is_refused_at_once(console: RunningConsole, fleet: Service) -> None:
    keys = ApiKeys(fleet.runtime.redis, prefix=fleet.runtime.settings.queue_prefix)
    with console.client() as person, console.client(token=console.token) as script:
        assert person.get("/api/skillbooks").status_code == 200
        assert script.get("/api/skillbooks").status_code == 200
        assert keys.revoke(console.ops.id)
        assert keys.revoke(console.keys.script.id)
        assert person.get("/api/skillbooks").status_code == 401
        assert script.get("/api/skillbooks").status_code == 401


def test_healthz_needs_no_credentials_and_pings_redis(console: RunningConsole) -> None:
    with console.client(auth=None) as client:
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["redis"] == "ok"


def test_the_skillbooks_page_shows_the_learned_skillbook(console: RunningConsole, fleet: Service) -> None:
    with console.client() as client:
        page = client.get("/skillbooks")
        api = client.get("/api/skillbooks").json()
    assert page.status_code == 200
    row = api["skillbooks"][0]
    assert row["version"] == fleet.runtime.store("support").version()
    assert row["active_skills"] == fleet.runtime.store("support").active_skills() > 0
    assert 'data-skillbook="support"' in page.text


def test_every_answer_carries_the_security_headers(console: RunningConsole) -> None:
    with console.client() as client:
        for path in ("/skillbooks", "/api/skillbooks"):
            headers = client.get(path).headers
            assert "script-src 'self'" in headers["content-security-policy"], path
            assert headers["x-frame-options"] == "DENY", path
    with console.client(auth=None) as client:
        assert client.get("/skillbooks").headers["x-frame-options"] == "DENY"


def test_a_foreign_host_header_is_refused_on_loopback(console: RunningConsole) -> None:
    with console.client() as client:
        response = client.get("/api/skillbooks", headers={"Host": "attacker.example:80"})
    assert response.status_code == 421


def test_every_post_route_refuses_a_browser_request_without_the_csrf_token(console: RunningConsole) -> None:
    posts = [r for r in console.app.routes if "POST" in (getattr(r, "methods", None) or ())]
    assert posts, "the console has no POST route"
    with console.client() as client:
        for route in posts:
            path = route.path.replace("{name}", "support")
            path = path.replace("{", "").replace("}", "")
            response = client.post(path, data={"note": "x"})
            assert response.status_code == 403, f"{route.path}: {response.status_code} {response.text[:200]}"
            assert "CSRF" in response.text, route.path


def test_the_csrf_token_of_one_user_does_not_pass_for_another(console: RunningConsole) -> None:
    with console.client(auth=console.login(console.keys.viewer)) as viewer:
        token = csrf_of(viewer)
    with console.client() as ops:
        assert csrf_of(ops) != token


def test_no_auth_is_refused_off_loopback_naming_api_keys() -> None:
    with pytest.raises(ConsoleSettingError, match=r"loopback host only, not --host 0\.0\.0\.0") as refused:
        ConsoleAccess.from_settings(no_auth=True, host="0.0.0.0")
    assert "ace-workers key create" in str(refused.value)
    assert ConsoleAccess.from_settings(no_auth=True, host="127.0.0.1").no_auth
    assert not ConsoleAccess.from_settings(no_auth=False, host="0.0.0.0").no_auth


def test_no_auth_on_loopback_acts_as_local(idle_service: Service) -> None:
    with (
        running_console(idle_service, access=ConsoleAccess(no_auth=True)) as running,
        running.client(auth=None) as client,
    ):
        page = client.get("/skillbooks")
    assert page.status_code == 200
    assert ">local<" in page.text.replace(" ", "")


def test_read_only_refuses_every_post_and_says_so(idle_service: Service, redis_client: redis.Redis) -> None:
    with running_console(idle_service, read_only=True) as running:
        posts = [r for r in running.app.routes if "POST" in (getattr(r, "methods", None) or ())]
        assert posts, "the console has no POST route"
        with running.client() as client:
            page = client.get("/skillbooks")
            token = csrf_of(client)
            for route in posts:
                path = route.path.replace("{", "").replace("}", "")
                response = client.post(path, data={"csrf_token": token})
                assert response.status_code == 403, route.path
                assert "read-only" in response.text, route.path
    assert 'id="read-only"' in page.text
    assert read_audit(redis_client, idle_service.runtime.settings.queue_prefix) == []


def test_healthz_says_only_not_ok_when_redis_is_down_naming_no_address(tmp_path: Path) -> None:
    with PrivateRedis(tmp_path / "redis", persistent=False) as server:
        service = build_test_service(server.url)
        try:
            with running_console(service) as console:
                server.stop()
                with console.client(auth=None) as client:
                    response = client.get("/healthz")
        finally:
            service.close()
    assert response.status_code == 503
    assert response.json() == {"ok": False, "redis": "not ok"}
    assert str(server.port) not in response.text


def test_a_notice_is_shown_by_its_code_only_and_text_in_the_url_is_ignored(console: RunningConsole) -> None:
    spoof = "Your key expired: sign in again at https://evil.example"
    with console.client() as client:
        spoofed = client.get("/skillbooks", params={"notice": spoof})
        coded = client.get("/skillbooks", params={"notice": "rolled-back"})
    assert spoofed.status_code == 200
    assert 'id="notice"' not in spoofed.text
    assert spoof not in spoofed.text  # (the page's API link carries the query, URL-encoded)
    assert f'<p class="notice" id="notice">{NOTICES["rolled-back"]}</p>' in coded.text
