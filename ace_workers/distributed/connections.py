"""Where the fleet connects: the URL schemes it accepts, the URL forms each library reads, the store's client.

Redis is reached by ``redis://``, ``rediss://`` (TLS), ``unix://`` or ``redis+socket://``
URLs; a RabbitMQ broker by ``amqp://`` or ``amqps://``; the skillbook store may be a
Redis Cluster, ``redis+cluster://`` (``rediss+cluster://`` with TLS). Every scheme is
named here, and every conversion between the forms is done here.

redis-py and kombu spell a unix-socket URL differently: redis-py wants
``unix:///path?db=N``, kombu (broker) and Celery (result backend) want
``redis+socket:///path?virtual_host=N``. TCP URLs are the same for both.

Every key of a skillbook carries the hash tag ``{sb:NAME}`` and every key of a
batch ``{batch:ID}``, so a skillbook's transactions and a batch's Lua script each
stay within one slot of a cluster (see :mod:`.store.keys` for the keys that span them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

if TYPE_CHECKING:
    import redis


__all__ = [
    # schemes
    "REDIS_SCHEMES",
    "AMQP_SCHEMES",
    "CLUSTER_SCHEMES",
    "is_amqp",
    "url_problem",
    # URL forms
    "client_url_for",
    "broker_url_for",
    "redact_url",
    # clients
    "store_client",
]

REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+socket")
AMQP_SCHEMES = ("amqp", "amqps")
# redis+cluster:// (rediss+cluster:// with TLS): any node of the cluster; the client finds the rest.
CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
# A unix socket's, in redis-py's form and in kombu's: the path is the socket.
SOCKET_SCHEMES = ("unix", "redis+socket")


def is_amqp(url: str) -> bool:
    """True for a RabbitMQ (AMQP) broker URL."""
    return urlsplit(url).scheme in AMQP_SCHEMES


def url_problem(url: str, schemes: tuple[str, ...]) -> str | None:
    """What is wrong with ``url`` where one of ``schemes`` is expected; None when nothing is."""
    parts = urlsplit(url)
    if parts.scheme not in schemes:
        return f"unsupported scheme {parts.scheme!r}: use one of {', '.join(schemes)}"
    if parts.scheme in SOCKET_SCHEMES and not parts.path:
        return "a unix-socket URL needs the socket's path"
    return None


def client_url_for(url: str) -> str:
    """The form of ``url`` redis-py's ``Redis.from_url`` accepts (redis+socket:// becomes unix://)."""
    parts = urlsplit(url)
    if parts.scheme != "redis+socket":
        return url
    query = dict(parse_qsl(parts.query))
    if "virtual_host" in query:
        query["db"] = query.pop("virtual_host")
    return _join_url("unix", parts.netloc, parts.path, query)


def broker_url_for(url: str) -> str:
    """The form of ``url`` Celery accepts as broker and result backend (unix:// becomes redis+socket://)."""
    parts = urlsplit(url)
    if parts.scheme != "unix":
        return url
    query = dict(parse_qsl(parts.query))
    if "db" in query:
        query["virtual_host"] = query.pop("db")
    return _join_url("redis+socket", parts.netloc, parts.path, query)


def _join_url(scheme: str, netloc: str, path: str, query: dict[str, str]) -> str:
    # urlunsplit drops the "//" of an empty authority ("unix:/path"), which neither
    # redis-py nor kombu reads as a socket path.
    return f"{scheme}://{netloc}{path}" + (f"?{urlencode(query)}" if query else "")


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***``, for messages and logs."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    credentials, _, location = parts.netloc.rpartition("@")
    user, has_password, _ = credentials.partition(":")
    if not has_password:
        return url
    netloc = f"{user}:***@{location}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def store_client(url: str) -> redis.Redis:
    """A client of the store at ``url``: RedisCluster for a cluster URL, else redis.Redis (client form).

    Typed as redis.Redis: RedisCluster answers every command the store sends, and the
    store's tests run on both.
    """
    # redis-py loads when a client is made: settings read URLs here, and --help needs no client.
    import redis
    from redis.cluster import RedisCluster

    parts = urlsplit(url)
    if parts.scheme in CLUSTER_SCHEMES:
        node = urlunsplit(parts._replace(scheme=CLUSTER_SCHEMES[parts.scheme]))
        return cast(redis.Redis, RedisCluster.from_url(node))
    return redis.Redis.from_url(url)
