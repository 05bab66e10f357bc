"""The deployment files read as a test needs them: docker-compose*.yml, .env.example, deploy/k8s.

Compose's ``${VAR...}`` forms are interpolated as ``docker compose`` does, with the values of
.env.example; a k8s container's environment is built from its ConfigMaps, with stand-ins for its
Secrets. No Docker engine or cluster is needed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DEPLOY_README = ROOT / "deploy" / "README.md"
COMPOSE = ROOT / "docker-compose.yml"
RABBITMQ_COMPOSE = ROOT / "docker-compose.rabbitmq.yml"  # the RabbitMQ variant, an override file
PARTITIONS_COMPOSE = ROOT / "docker-compose.write-partitions.yml"  # two write partitions, an override
ENV_EXAMPLE = ROOT / ".env.example"
K8S = ROOT / "deploy" / "k8s"
K8S_RABBITMQ = ROOT / "deploy" / "k8s-rabbitmq"  # the RabbitMQ variant, a kustomize overlay of K8S
KUSTOMIZATION = "kustomization.yaml"
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
# Stand-ins for what the example files leave for the operator to fill in.
SECRET_STAND_IN = "example-secret"
# A required value that must have a form of its own: Flower's is "user:password".
SHAPED_STAND_INS = {
    "ACE_FLOWER_BASIC_AUTH": f"ops:{SECRET_STAND_IN}",
}
POD_INDEX_FIELD = "metadata.labels['apps.kubernetes.io/pod-index']"
# libyaml's parser where PyYAML was built with it: the pure-Python one took over a second of every
# pytest worker's collection, since the k8s command lines are parametrized from these files.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Compose's ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error} and ${NAME?error}.
COMPOSE_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=YAML_LOADER)  # a safe loader, C or Python


def load_yaml_all(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=YAML_LOADER))  # a safe loader, C or Python


# -- compose and .env.example ------------------------------------------------------------


def read_env_example() -> dict[str, str]:
    """The variables of .env.example, quotes removed."""
    values = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, value = line.partition("=")
        assert sep, f".env.example: not NAME=value: {line!r}"
        values[name.strip()] = value.strip().strip('"').strip("'")
    return values


def required_compose_variables() -> set[str]:
    """The variables docker-compose.yml requires (``${NAME:?...}``): compose refuses to run without them."""
    return {m["name"] for m in COMPOSE_VARIABLE.finditer(COMPOSE.read_text()) if m["op"] == ":?"}


def compose_environment() -> dict[str, str]:
    """What `docker compose` interpolates with: .env.example, its required (``:?``) blanks filled in."""
    required = required_compose_variables()

    def stand_in(name: str) -> str:
        return SHAPED_STAND_INS.get(name, SECRET_STAND_IN) if name in required else ""

    return {name: value or stand_in(name) for name, value in read_env_example().items()}


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` forms, and ``$$`` for ``$``."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        value = env.get(name)
        if op in (":-", "-") and (value is None or (op == ":-" and not value)):
            return arg or ""
        if op in (":?", "?") and (value is None or (op == ":?" and not value)):
            raise AssertionError(f"compose would refuse: {name}: {arg}")
        return value or ""

    return COMPOSE_VARIABLE.sub(substitute, text).replace("$$", "$")


def load_compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(COMPOSE.read_text())
    return data


def compose_services() -> dict[str, dict[str, Any]]:
    services: dict[str, dict[str, Any]] = load_compose()["services"]
    return services


def service_env(service: dict[str, Any], values: dict[str, str] | None = None) -> dict[str, str]:
    """A compose service's container environment, interpolated with ``values`` (default: .env.example's)."""
    env = service.get("environment") or {}
    assert isinstance(env, dict), "use the mapping form of environment:"
    values = compose_environment() if values is None else values
    return {name: interpolate(str(value), values) for name, value in env.items()}


# -- kubernetes --------------------------------------------------------------------------


def k8s_documents() -> list[tuple[str, dict[str, Any]]]:
    """(file name, document) of every manifest in deploy/k8s."""
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == KUSTOMIZATION:  # kustomize's own file, not an object of the cluster
            continue
        for doc in load_yaml_all(path.read_text()):
            if doc is not None:
                docs.append((path.name, doc))
    return docs


def k8s_kind(kind: str) -> dict[str, dict[str, Any]]:
    return {doc["metadata"]["name"]: doc for _, doc in k8s_documents() if doc["kind"] == kind}


def k8s_workloads() -> dict[str, dict[str, Any]]:
    """The Deployments and StatefulSets (the writers), by name."""
    return {**k8s_kind("Deployment"), **k8s_kind("StatefulSet")}


def k8s_containers() -> list[tuple[str, dict[str, Any]]]:
    return [
        (name, container)
        for name, workload in k8s_workloads().items()
        for container in workload["spec"]["template"]["spec"]["containers"]
    ]


def container_env(container: dict[str, Any]) -> dict[str, str]:
    """A k8s container's environment: its ConfigMaps, and stand-ins for its Secrets."""
    config_maps = k8s_kind("ConfigMap")
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        env.update(config_maps[source["configMapRef"]["name"]]["data"])
    for entry in container.get("env", []):
        secret = entry.get("valueFrom", {}).get("secretKeyRef")
        assert secret is None or secret["name"] in k8s_kind("Secret"), entry
        if entry["name"] == "ACE_REDIS_URL":
            env[entry["name"]] = "redis://:pw@redis:6379/0"
        elif entry["name"] == "POD_INDEX":  # a StatefulSet pod's ordinal, from its label
            assert entry["valueFrom"]["fieldRef"]["fieldPath"] == POD_INDEX_FIELD, entry
            env[entry["name"]] = "0"
        elif entry["name"] in SHAPED_STAND_INS:
            env[entry["name"]] = SHAPED_STAND_INS[entry["name"]]
        else:
            env[entry["name"]] = entry.get("value", SECRET_STAND_IN)
    return env


# -- command lines -----------------------------------------------------------------------


def command_option(argv: list[str] | tuple[str, ...], name: str) -> str:
    """The value of option ``name`` in ``argv``, which must hold it exactly once."""
    assert argv.count(name) == 1, (argv, name)
    return argv[argv.index(name) + 1]
