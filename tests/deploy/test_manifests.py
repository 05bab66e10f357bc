"""docker-compose.yml, .env.example and deploy/k8s: what can be checked with no Docker engine or cluster.

Every file parses; every ``ace-workers`` command line of a container (commands, health checks,
probes) is accepted by ``--help`` of the real command (its Typer app, run in-process with the
container's environment), so a misspelled option or subcommand fails; image and variable names
agree across the three; every ``ACE_*`` name is a WorkerSettings field; the writer and beat run exactly once.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ace_workers.cli import app as cli_app
from ace_workers.distributed.settings import ENV_PREFIX, RETIRED_SETTINGS, WorkerSettings
from tests.support.deploy_files import (
    COMPOSE,
    COMPOSE_VARIABLE,
    K8S,
    K8S_RABBITMQ,
    KUSTOMIZATION,
    PARTITIONS_COMPOSE,
    POD_INDEX_FIELD,
    RABBITMQ_COMPOSE,
    ROOT,
    command_option,
    compose_environment,
    compose_services,
    container_env,
    interpolate,
    k8s_containers,
    k8s_documents,
    k8s_kind,
    k8s_workloads,
    load_compose,
    load_yaml,
    load_yaml_all,
    read_env_example,
    required_compose_variables,
    service_env,
)

CLI_APP = "ace_workers.distributed.ops.inspect_app"
HOSTNAME = "pod-1"

# -- command lines ---------------------------------------------------------------------


@dataclass(frozen=True)
class CommandLine:
    """A command line found in the deployment files, with the environment it runs in."""

    where: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]


def _shell(command: str) -> list[str]:
    return shlex.split(command.replace("$HOSTNAME", HOSTNAME))


def _compose_command_lines() -> list[CommandLine]:
    values = compose_environment()
    found = []
    for name, service in compose_services().items():
        env = tuple(sorted(service_env(service).items()))
        if "command" in service:
            argv = [interpolate(str(part), values) for part in service["command"]]
            found.append(CommandLine(f"compose:{name}", tuple(argv), env))
        test = service.get("healthcheck", {}).get("test")
        if test:
            if test[0] == "CMD-SHELL":
                argv = _shell(interpolate(test[1], values))
            else:
                assert test[0] == "CMD", test
                argv = [interpolate(str(part), values) for part in test[1:]]
            found.append(CommandLine(f"compose:{name}:healthcheck", tuple(argv), env))
    return found


def expand(part: str, values: dict[str, str]) -> str:
    """``$(VAR)`` in a container's command replaced from its environment, as the kubelet does."""
    return re.sub(r"\$\((\w+)\)", lambda match: values[match.group(1)], part)


def _k8s_command_lines() -> list[CommandLine]:
    found = []
    for name, container in k8s_containers():
        values = container_env(container)
        env = tuple(sorted(values.items()))
        argv = [expand(part, values) for part in [*container.get("command", []), *container.get("args", [])]]
        found.append(CommandLine(f"k8s:{name}", tuple(argv), env))
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            command = container.get(probe, {}).get("exec", {}).get("command")
            if command:
                argv = _shell(command[2]) if command[:2] == ["sh", "-c"] else list(command)
                found.append(CommandLine(f"k8s:{name}:{probe}", tuple(argv), env))
    return found


ALL_COMMAND_LINES = _compose_command_lines() + _k8s_command_lines()
OURS = [c for c in ALL_COMMAND_LINES if c.argv[0] == "ace-workers"]


def test_every_command_line_is_one_of_ours_or_the_redis_images() -> None:
    programs = {c.argv[0] for c in ALL_COMMAND_LINES}
    assert programs == {"ace-workers", "python", "redis-server", "redis-cli"}
    for c in ALL_COMMAND_LINES:
        if c.argv[0].startswith("redis"):
            assert c.where.startswith("compose:redis"), c.where
        if c.argv[0] == "python":
            assert c.argv[1] == "-c"
            compile(c.argv[2], c.where, "exec")
        if c.argv[0] == "celery":
            assert c.argv[1:3] == ("-A", CLI_APP), c.where


@pytest.mark.parametrize("line", OURS, ids=[c.where for c in OURS])
def test_every_command_line_is_accepted_by_the_real_commands_help(line: CommandLine) -> None:
    # The container's environment replaces every ACE_* variable of this one for the call.
    environ: dict[str, str | None] = {k: None for k in os.environ if k.startswith(ENV_PREFIX)}
    environ.update(dict(line.env))
    result = CliRunner().invoke(cli_app, [*line.argv[1:], "--help"], env=environ)
    assert result.exit_code == 0, (
        f"{line.where}: {shlex.join(line.argv)} --help exited {result.exit_code}:\n{result.output[-2000:]}"
    )
    assert "Usage:" in result.output


# -- files -----------------------------------------------------------------------------


def test_every_yaml_file_parses_into_named_objects() -> None:
    compose = load_compose()
    assert set(compose["services"]) == {
        "redis",
        "worker-execute",
        "worker-learn",
        "worker-write",
        "beat",
        "flower",
        "console",
        "producer",
    }
    docs = k8s_documents()
    assert {name for name, _ in docs} == {
        "config.yaml",
        "workers.yaml",
        "beat.yaml",
        "flower.yaml",
        "console.yaml",
        "learn-autoscaling.yaml",
    }
    for name, doc in docs:
        assert {"apiVersion", "kind", "metadata"} <= set(doc), name
    assert set(k8s_kind("Deployment")) == {"worker-execute", "worker-learn", "beat", "flower", "console"}
    assert set(k8s_kind("StatefulSet")) == {"worker-write"}
    assert set(k8s_kind("Service")) == {"flower", "console"}


def test_one_image_everywhere_built_from_the_dockerfile() -> None:
    image = read_env_example()["FLEET_IMAGE"]
    values = compose_environment()
    for name, service in compose_services().items():
        if name == "redis":
            continue
        assert interpolate(service["image"], values) == image, name
        assert interpolate(service["image"], {}) == image, f"{name}: the default differs from .env.example"
        assert service["build"] == {"context": ".", "dockerfile": "deploy/Dockerfile"}, name
    for name, container in k8s_containers():
        assert container["image"] == image, name
    # What the image holds and how it is built: tests/deploy/test_dockerfile.py.


def test_compose_uses_exactly_the_variables_env_example_documents() -> None:
    used = set(COMPOSE_VARIABLE.findall(COMPOSE.read_text() + RABBITMQ_COMPOSE.read_text()))
    used_names = {name for name, _, _ in used}
    assert used_names == set(read_env_example())


def _ace_names(env: dict[str, str]) -> set[str]:
    return {name for name in env if name.startswith(ENV_PREFIX)}


def test_settings_names_agree_across_compose_env_example_and_k8s() -> None:
    compose_names = set().union(*(_ace_names(service_env(s)) for s in compose_services().values()))
    k8s_names = set().union(*(_ace_names(container_env(c)) for _, c in k8s_containers()))
    assert compose_names == k8s_names
    # .env.example sets every ACE_* variable directly but the Redis URL, built from REDIS_PASSWORD.
    assert _ace_names(read_env_example()) == compose_names - {"ACE_REDIS_URL"}
    # The k8s defaults are the .env.example defaults.
    (config,) = k8s_kind("ConfigMap").values()
    example = read_env_example()
    assert {name: example[name] for name in config["data"]} == config["data"]


def test_every_container_environment_is_valid_settings() -> None:
    environments = [(f"compose:{n}", service_env(s)) for n, s in compose_services().items() if n != "redis"]
    environments += [(f"k8s:{n}", container_env(c)) for n, c in k8s_containers()]
    for where, env in environments:
        settings = WorkerSettings.from_env(env)  # raises UnknownSettingError on a misspelled name
        assert settings.redis_url, where


# -- topology --------------------------------------------------------------------------


def _queue_roles(argv: list[str]) -> set[str]:
    return set(command_option(argv, "--queues").split(","))


def test_one_writer_per_write_partition_with_one_slot_and_one_beat() -> None:
    services = compose_services()
    writers = [n for n, s in services.items() if s["command"][:2] == ["ace-workers", "worker"]]
    writers = [n for n in writers if "write" in _queue_roles(services[n]["command"])]
    assert writers == ["worker-write"]
    assert services["worker-write"]["deploy"]["replicas"] == 1
    assert command_option(services["worker-write"]["command"], "--concurrency") == "1"
    assert command_option(services["worker-write"]["command"], "--partition") == "0"
    assert service_env(services["worker-write"])["ACE_WRITE_PARTITIONS"] == "1"
    assert services["beat"]["command"] == ["ace-workers", "beat"]
    assert services["beat"]["deploy"]["replicas"] == 1
    assert [n for n, s in services.items() if s.get("command", [None])[1:2] == ["beat"]] == ["beat"]

    k8s_writers = [
        n
        for n, c in k8s_containers()
        if c["command"][:2] == ["ace-workers", "worker"] and "write" in _queue_roles(c["command"])
    ]
    assert k8s_writers == ["worker-write"]
    writer_set = k8s_kind("StatefulSet")["worker-write"]
    (config,) = k8s_kind("ConfigMap").values()
    # One pod per partition, pod K serving partition K (its ordinal), one slot each.
    assert writer_set["spec"]["replicas"] == int(config["data"]["ACE_WRITE_PARTITIONS"])
    (writer,) = writer_set["spec"]["template"]["spec"]["containers"]
    assert command_option(writer["command"], "--concurrency") == "1"
    assert command_option(writer["command"], "--partition") == "$(POD_INDEX)"
    (index,) = [e for e in writer["env"] if e["name"] == "POD_INDEX"]
    assert index["valueFrom"]["fieldRef"]["fieldPath"] == POD_INDEX_FIELD
    beat = k8s_kind("Deployment")["beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert not any(s["spec"]["scaleTargetRef"]["name"] in ("worker-write", "beat") for s in _scaled())


def test_the_write_partitions_variant_runs_one_writer_for_each_of_its_two_partitions() -> None:
    from ace_workers.cli.worker import worker_queues

    base = compose_services()
    override = load_yaml(PARTITIONS_COMPOSE.read_text())["services"]
    roles = {name for name, service in base.items() if service.get("command", [""])[0] == "ace-workers"}
    assert roles <= set(override)
    writers = {}
    for name, service in override.items():
        # compose merges the override's environment into the service's own (extends: the base's).
        origin = base.get(name) or base[service["extends"]["service"]]
        env = {**service_env(origin), **{k: str(v) for k, v in service["environment"].items()}}
        settings = WorkerSettings.from_env(env)
        assert settings.write_partitions == 2, name
        command = service.get("command") or origin["command"]
        if command[:2] == ["ace-workers", "worker"] and "write" in _queue_roles(command):
            assert command_option(command, "--concurrency") == "1", name
            partition = int(command_option(command, "--partition"))
            (served,) = worker_queues(settings, ["write"], partition)
            writers[partition] = served
    assert writers == {0: "ace.write.0", 1: "ace.write.1"}


def _scaled() -> list[dict[str, Any]]:
    return list(k8s_kind("ScaledObject").values()) + list(k8s_kind("HorizontalPodAutoscaler").values())


def test_learn_workers_scale_on_the_redis_list_of_the_learn_queue() -> None:
    (scaled,) = k8s_kind("ScaledObject").values()
    assert scaled["spec"]["scaleTargetRef"]["name"] == "worker-learn"
    (trigger,) = scaled["spec"]["triggers"]
    (config,) = k8s_kind("ConfigMap").values()
    prefix = config["data"]["ACE_QUEUE_PREFIX"]
    assert trigger["type"] == "redis"
    assert trigger["metadata"]["listName"] == WorkerSettings(queue_prefix=prefix).queue_names()["learn"]
    assert trigger["authenticationRef"]["name"] in k8s_kind("TriggerAuthentication")
    # `docker compose up --scale worker-learn=N` needs no fixed container name or host port.
    assert not {"container_name", "ports"} & set(compose_services()["worker-learn"])


def test_every_worker_is_health_checked_on_the_healthz_of_its_own_metrics_port() -> None:
    for name, service in compose_services().items():
        command = service.get("command", [])
        if command[:2] != ["ace-workers", "worker"]:
            continue
        check = service["healthcheck"]["test"]
        assert check[:3] == ["CMD", "python", "-c"], name
        url = f"http://127.0.0.1:{command_option(command, '--metrics-port')}/healthz"
        assert f"urlopen('{url}'" in check[3], name
    for name, container in k8s_containers():
        if container["command"][:2] != ["ace-workers", "worker"]:
            continue
        probe = container["livenessProbe"]["httpGet"]
        ports = {port["name"]: port["containerPort"] for port in container["ports"]}
        assert probe["path"] == "/healthz", name
        assert str(ports[probe["port"]]) == command_option(container["command"], "--metrics-port"), name


# Flower's credentials variable and its k8s Secret (the console authenticates API keys, in Redis).
WEB_ROLES = [("flower", "ACE_FLOWER_BASIC_AUTH", "ace-flower")]


def test_the_console_is_deployed_behind_api_keys_with_no_credentials_of_its_own() -> None:
    service = compose_services()["console"]
    (container,) = k8s_kind("Deployment")["console"]["spec"]["template"]["spec"]["containers"]
    for where, command, env in (
        ("compose", service["command"], service_env(service)),
        ("k8s", container["command"], container_env(container)),
    ):
        assert "--no-auth" not in command, where
        retired = set(env) & set(RETIRED_SETTINGS)
        assert not retired, f"{where} sets {retired}, which the console refuses"
    assert not set(read_env_example()) & set(RETIRED_SETTINGS)
    assert "ace-console" not in k8s_kind("Secret")


@pytest.mark.parametrize(("role", "variable", "secret"), WEB_ROLES)
def test_flower_gets_its_credentials_and_never_starts_without_auth(
    role: str, variable: str, secret: str
) -> None:
    service = compose_services()[role]
    assert "--no-auth" not in service["command"]
    assert variable in service["environment"]
    assert variable in required_compose_variables()
    (container,) = k8s_kind("Deployment")[role]["spec"]["template"]["spec"]["containers"]
    assert "--no-auth" not in container["command"]
    (auth,) = [e for e in container["env"] if e["name"] == variable]
    assert auth["valueFrom"]["secretKeyRef"]["name"] == secret
    # No default credentials: .env.example leaves them (and the Redis password) to the operator.
    example = read_env_example()
    assert example[variable] == ""
    assert example["REDIS_PASSWORD"] == ""


@pytest.mark.parametrize(("role", "option"), [("flower", "--address"), ("console", "--host")])
def test_deployed_web_roles_listen_on_every_interface_explicitly(role: str, option: str) -> None:
    # The commands' default is loopback; the deployments serve them to other hosts, behind auth.
    assert command_option(compose_services()[role]["command"], option) == "0.0.0.0"
    (container,) = k8s_kind("Deployment")[role]["spec"]["template"]["spec"]["containers"]
    assert command_option(container["command"], option) == "0.0.0.0"


def test_every_worker_serves_its_metrics_where_prometheus_is_told_to_scrape() -> None:
    compose_workers = {
        n: s for n, s in compose_services().items() if s["command"][:2] == ["ace-workers", "worker"]
    }
    assert set(compose_workers) == {"worker-execute", "worker-learn", "worker-write"}
    for name, service in compose_workers.items():
        assert command_option(service["command"], "--metrics-port") == "9100", name
        # A prefork worker refuses --metrics-port: its children would each count alone.
        assert "prefork" not in service["command"], name

    deployments = k8s_workloads()
    workers = [(n, c) for n, c in k8s_containers() if c["command"][:2] == ["ace-workers", "worker"]]
    assert {n for n, _ in workers} == set(compose_workers)
    for name, container in workers:
        port = command_option(container["command"], "--metrics-port")
        assert {"name": "metrics", "containerPort": int(port)} in container["ports"], name
        annotations = deployments[name]["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true", name
        assert annotations["prometheus.io/port"] == port, name


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    # Whatever a fresh machine needs (the venv, chromium) is installed by `make test` itself
    # (and `make docs`).
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert commands[-1] == "make test"
    # Before it, only the shell's set-up and the strict build of the docs site the README names.
    assert all(c.startswith(("set ", "cd ")) or c == "make docs" for c in commands[:-1])
    assert "make docs" in commands
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme
    assert "make docs" in readme


def test_the_rabbitmq_variant_gives_every_role_the_broker_and_waits_for_rabbitmq() -> None:
    base = compose_services()
    override = load_yaml(RABBITMQ_COMPOSE.read_text())["services"]
    roles = {name for name, service in base.items() if service.get("command", [""])[0] == "ace-workers"}
    assert roles <= set(override)
    values = {**compose_environment(), "RABBITMQ_PASSWORD": "pw"}
    rabbitmq = override["rabbitmq"]["environment"]
    for name in roles:
        # compose merges the override's environment into the service's own.
        env = {
            **service_env(base[name]),
            **{k: interpolate(str(v), values) for k, v in override[name]["environment"].items()},
        }
        settings = WorkerSettings.from_env(env)
        assert settings.broker_url == (
            f"amqp://{rabbitmq['RABBITMQ_DEFAULT_USER']}:pw@rabbitmq:5672/{rabbitmq['RABBITMQ_DEFAULT_VHOST']}"
        ), name
        assert override[name]["depends_on"]["rabbitmq"]["condition"] == "service_healthy", name
    assert override["rabbitmq"]["healthcheck"]["test"][1] == "rabbitmq-diagnostics"


def kustomize(folder: Path) -> list[dict[str, Any]]:
    """The objects ``kubectl kustomize`` builds from ``folder``: what ``kubectl apply -k`` would apply."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.fail(
            "kubectl is not installed: the kustomize checks build the manifests with it", pytrace=False
        )
    built = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stderr
    return [doc for doc in load_yaml_all(built.stdout) if doc is not None]


def test_the_base_kustomization_builds_exactly_the_manifests_of_deploy_k8s() -> None:
    listed = load_yaml((K8S / KUSTOMIZATION).read_text())["resources"]
    assert sorted(listed) == sorted(p.name for p in K8S.glob("*.yaml") if p.name != KUSTOMIZATION)
    names = sorted((doc["kind"], doc["metadata"]["name"]) for doc in kustomize(K8S))
    assert names == sorted((doc["kind"], doc["metadata"]["name"]) for _, doc in k8s_documents())


def test_the_rabbitmq_overlay_gives_every_role_the_broker_and_scales_learn_on_its_rabbitmq_queue() -> None:
    objects: dict[tuple[str, str], dict[str, Any]] = {
        (doc["kind"], doc["metadata"]["name"]): doc for doc in kustomize(K8S_RABBITMQ)
    }
    secret = objects[("Secret", "ace-rabbitmq")]
    config = objects[("ConfigMap", "ace-settings")]["data"]
    deployments = {
        name: doc for (kind, name), doc in objects.items() if kind in ("Deployment", "StatefulSet")
    }
    assert set(deployments) == set(k8s_workloads())
    for name, deployment in deployments.items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        (broker,) = [entry for entry in container["env"] if entry["name"] == "ACE_BROKER_URL"]
        assert broker["valueFrom"]["secretKeyRef"] == {"name": "ace-rabbitmq", "key": "url"}, name
        env = {
            **config,
            "ACE_REDIS_URL": "redis://:pw@redis:6379/0",
            "ACE_BROKER_URL": secret["stringData"]["url"],
        }
        settings = WorkerSettings.from_env(env)
        assert settings.broker_url is not None, name
        assert settings.broker_url.startswith("amqp://"), name
    (trigger,) = objects[("ScaledObject", "worker-learn")]["spec"]["triggers"]
    assert trigger["type"] == "rabbitmq"
    learn = WorkerSettings(queue_prefix=config["ACE_QUEUE_PREFIX"]).queue_names()["learn"]
    assert (trigger["metadata"]["queueName"], trigger["metadata"]["mode"]) == (learn, "QueueLength")
    authentication = objects[("TriggerAuthentication", trigger["authenticationRef"]["name"])]
    assert {"parameter": "host", "name": "ace-rabbitmq", "key": "url"} in authentication["spec"][
        "secretTargetRef"
    ]
