"""What the tests share; every helper lives here once, and test modules import from here, never
from each other or from a conftest.

Servers and processes: ``servers`` (free_port, PrivateRedis, LocalCluster, PrivateRabbitMQ),
``fixtures`` (their fixtures; a plugin), ``processes`` (start_worker, stop, terminate),
``workers`` (in-process fleets), ``hooked_redis``. The CLI and the store: ``cli`` (said,
keys_of, write_traces), ``operations``. Fake LLMs and roles: ``llms``, ``roles``,
``embedders``, ``pipeline``. Integrations: ``skillbooks``, ``browser``, ``browser_agents``,
``langchain_agents``, ``claude_code``, ``mcp``. Observability: ``tracing``, ``opik`` (the
stand-in Opik server; a plugin). Docs: ``docs`` (the pages, their blocks, running an example).
Packaging: ``packaging`` (the sdist and wheel built, the wheel installed in a virtualenv outside
the tree).
"""
