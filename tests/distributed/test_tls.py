"""rediss:// URLs: the app's broker and result backend and redis-py clients verify certificates.

No TLS server is needed: building the clients is where a rediss:// URL used to fail
(Celery's result backend) or silently skip verification (kombu's broker).
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator

import pytest
import redis
from celery import Celery

from ace_workers.distributed.connections import client_url_for
from ace_workers.distributed.settings import WorkerSettings
from ace_workers.distributed.worker.app import create_app, tls_config

TLS_URL = "rediss://:s3cret@redis.example.com:6380/0"


@pytest.fixture
def tls_app(request: pytest.FixtureRequest) -> Iterator[Celery]:
    """An app on ``request.param`` (a rediss:// URL); nothing connects."""
    app = create_app(WorkerSettings(redis_url=request.param))
    yield app
    app.close()


def _verify_modes(app: Celery) -> tuple[object, object]:
    """The certificate requirement of the result backend's and the broker's connections."""
    backend = app.backend.connparams  # this access used to raise ValueError for rediss://
    assert backend["connection_class"] is redis.SSLConnection
    with app.connection_for_write() as connection:
        assert connection.transport_cls == "rediss"
        broker = connection.ssl
    assert isinstance(broker, dict)
    return backend["ssl_cert_reqs"], broker["ssl_cert_reqs"]


@pytest.mark.parametrize("tls_app", [TLS_URL], indirect=True)
def test_a_rediss_url_builds_a_backend_and_broker_that_require_certificates(tls_app: Celery) -> None:
    assert _verify_modes(tls_app) == (ssl.CERT_REQUIRED, ssl.CERT_REQUIRED)
    assert tls_app.conf.broker_use_ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    assert tls_app.conf.redis_backend_use_ssl == {"ssl_cert_reqs": ssl.CERT_REQUIRED}


@pytest.mark.parametrize("tls_app", [f"{TLS_URL}?ssl_cert_reqs=none"], indirect=True)
def test_ssl_cert_reqs_given_in_the_url_wins(tls_app: Celery) -> None:
    assert _verify_modes(tls_app) == (ssl.CERT_NONE, ssl.CERT_NONE)


@pytest.mark.parametrize("tls_app", [f"{TLS_URL}?ssl_ca_certs=%2Fetc%2Fredis%2Fca.pem"], indirect=True)
def test_a_ca_file_in_the_url_is_used_and_certificates_are_still_required(tls_app: Celery) -> None:
    assert tls_app.backend.connparams["ssl_ca_certs"] == "/etc/redis/ca.pem"
    assert tls_app.backend.connparams["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    with tls_app.connection_for_write() as connection:
        # kombu hands the URL's ssl options to redis-py, whose SSLConnection requires certificates.
        assert connection.ssl == {"ssl_ca_certs": "/etc/redis/ca.pem"}
        tls_connection = redis.SSLConnection(host="redis.example.com", **connection.ssl)
    assert tls_connection.cert_reqs == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("url", "mode"), [(TLS_URL, ssl.CERT_REQUIRED), (f"{TLS_URL}?ssl_cert_reqs=none", ssl.CERT_NONE)]
)
def test_redis_py_clients_of_the_same_url_verify_likewise(url: str, mode: ssl.VerifyMode) -> None:
    client = redis.Redis.from_url(client_url_for(url))
    try:
        connection = client.connection_pool.make_connection()
        assert isinstance(connection, redis.SSLConnection)
        assert connection.cert_reqs == mode
        assert connection.check_hostname is (mode == ssl.CERT_REQUIRED)
    finally:
        client.close()


def test_plain_redis_urls_get_no_tls_settings() -> None:
    assert tls_config("redis://127.0.0.1:6379/15") == {}
    assert tls_config("redis+socket:///tmp/redis.sock") == {}
    app = create_app(WorkerSettings(redis_url="redis://127.0.0.1:6379/15"))
    try:
        assert not app.conf.broker_use_ssl
        assert not app.conf.redis_backend_use_ssl
    finally:
        app.close()
