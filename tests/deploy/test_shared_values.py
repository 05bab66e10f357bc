"""What the docs (README.md, docs/), deploy/README.md, docker-compose*.yml, .env.example and deploy/k8s
all state agrees.

An operator reads one of them and decides: how many threads a learn worker runs, which port
Flower and the metrics are on, what a queue is called, what a setting defaults to, which image
runs, which secrets must be set. Each test gathers one such value from every file that states it
(YAML parsed with yaml, the READMEs and the docs' pages read with a regex on the line that states
it) and checks that they are one value. A regex that finds nothing fails too, so rewording a line
cannot hide a value.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import tomllib
from collections.abc import Iterable
from typing import Any

import pytest

from ace_workers.cli.console import DEFAULT_CONSOLE_PORT
from ace_workers.console.access import CREATE_KEY
from ace_workers.distributed.settings import IGNORED_PREFIXES, QUEUE_ROLES, WorkerSettings, env_name
from tests.support.deploy_files import (
    COMPOSE,
    COMPOSE_VARIABLE,
    DEPLOY_README,
    ENV_EXAMPLE,
    K8S,
    K8S_RABBITMQ,
    PARTITIONS_COMPOSE,
    RABBITMQ_COMPOSE,
    ROOT,
    command_option,
    compose_environment,
    compose_services,
    interpolate,
    k8s_containers,
    k8s_kind,
    k8s_workloads,
    load_yaml_all,
    read_env_example,
    required_compose_variables,
)
from tests.support.docs import code_blocks, page_text, pages, section_text

COMPOSE_FILES = (COMPOSE, RABBITMQ_COMPOSE, PARTITIONS_COMPOSE)
K8S_FILES = (*sorted(K8S.glob("*.yaml")), *sorted(K8S_RABBITMQ.glob("*.yaml")))
FLOWER_AUTH = "ACE_FLOWER_BASIC_AUTH"
WORKER = ("ace-workers", "worker")
# A write worker's partition: K in deploy/README, 0 in compose (its one writer), $(POD_INDEX) in k8s.
PARTITION_VALUES = {"K", "0", "$(POD_INDEX)"}


def one_value(where: dict[str, Any], what: str) -> Any:
    """The one value every source in ``where`` states for ``what``; fails naming each source's."""
    assert where, f"no file states {what}"
    values = {str(value) for value in where.values()}
    stated = "\n".join(f"  {source}: {value}" for source, value in sorted(where.items()))
    assert len(values) == 1, f"the files disagree on {what}:\n{stated}"
    return next(iter(where.values()))


def found(pattern: str, text: str, source: str) -> list[str]:
    """Every match of ``pattern``'s group in ``text``; at least one, or the file was reworded."""
    matches = re.findall(pattern, text)
    assert matches, f"{source}: no line matches {pattern!r}; update this test with the file"
    return matches


def is_worker(argv: Iterable[str]) -> bool:
    return tuple(argv)[:2] == WORKER


# -- worker command lines ------------------------------------------------------------------


def _normalised(argv: list[str]) -> tuple[str, ...]:
    """A worker's command line with its write partition (K, 0 or the pod's ordinal) written K."""
    if "--partition" not in argv:
        return tuple(argv)
    partition = command_option(argv, "--partition")
    assert partition in PARTITION_VALUES, argv
    return tuple(
        part.replace(partition, "K") if part in (partition, f"write-{partition}@%h") else part
        for part in argv
    )


def compose_worker_commands(values: dict[str, str]) -> dict[str, tuple[str, ...]]:
    """queue -> the compose worker's command line, interpolated with ``values``."""
    commands = {}
    for service in compose_services().values():
        if is_worker(service.get("command", [])):  # redis' command needs its password
            argv = [interpolate(str(part), values) for part in service["command"]]
            commands[command_option(argv, "--queues")] = _normalised(argv)
    return commands


def k8s_worker_commands() -> dict[str, tuple[str, ...]]:
    return {
        command_option(c["command"], "--queues"): _normalised(c["command"])
        for _, c in k8s_containers()
        if is_worker(c["command"])
    }


def deploy_readme_commands() -> list[list[str]]:
    """The command lines of deploy/README's table of roles."""
    rows = found(r"(?m)^\| [^|]+ \| `(ace-workers [^`]+)`", DEPLOY_README.read_text(), "deploy/README.md")
    return [shlex.split(row) for row in rows]


def deploy_readme_worker_commands() -> dict[str, tuple[str, ...]]:
    return {
        command_option(argv, "--queues"): _normalised(argv)
        for argv in deploy_readme_commands()
        if is_worker(argv)
    }


def test_every_worker_runs_the_same_command_line_in_deploy_readme_compose_and_k8s() -> None:
    sources = {
        "deploy/README.md": deploy_readme_worker_commands(),
        "docker-compose.yml": compose_worker_commands(compose_environment()),
        "docker-compose.yml without .env": compose_worker_commands({}),
        "deploy/k8s": k8s_worker_commands(),
    }
    for source, commands in sources.items():
        assert set(commands) == set(QUEUE_ROLES), f"{source}: workers for {sorted(commands)}"
    for queue in QUEUE_ROLES:
        one_value(
            {source: shlex.join(commands[queue]) for source, commands in sources.items()},
            f"the {queue} worker's command line",
        )


def test_flower_beat_and_the_console_run_the_same_command_line_in_deploy_readme_compose_and_k8s() -> None:
    roles = ("flower", "beat", "console")
    readme = {argv[1]: shlex.join(argv) for argv in deploy_readme_commands() if argv[1] in roles}
    deployments = k8s_kind("Deployment")
    for role in roles:
        (container,) = deployments[role]["spec"]["template"]["spec"]["containers"]
        one_value(
            {
                "deploy/README.md": readme[role],
                "docker-compose.yml": shlex.join(compose_services()[role]["command"]),
                "deploy/k8s": shlex.join(container["command"]),
            },
            f"{role}'s command line",
        )


def _env_concurrency() -> dict[str, str]:
    """queue -> the .env.example value of the variable compose's worker takes its --concurrency from."""
    values = read_env_example()
    stated = {}
    for service in compose_services().values():
        command = [str(part) for part in service.get("command", [])]
        variable = (
            COMPOSE_VARIABLE.fullmatch(command_option(command, "--concurrency"))
            if is_worker(command)
            else None
        )
        if variable is not None:
            stated[command_option(command, "--queues")] = values[variable["name"]]
    return stated


# The pages that show docker compose's fleet: (page, the section that shows it).
COMPOSE_SECTIONS = (
    ("docs/fleet.md", "## Run it as a fleet"),
    ("docs/getting-started.md", "## Then a fleet"),
    ("README.md", "## Quick start: a fleet"),
)


def _docs_concurrency() -> dict[str, str]:
    """queue -> --concurrency of the worker lines of docs/fleet.md's "Running it distributed" block."""
    (block,) = code_blocks("docs/fleet.md", "## Running it distributed", "console")
    lines = found(r"(?m)^\$ ace-workers worker --queues (\w+) --concurrency (\d+)", block, "docs/fleet.md")
    return dict(lines)


def test_each_queue_has_one_number_of_threads_in_every_file() -> None:
    sources: dict[str, dict[str, str]] = {
        "docs/fleet.md (Running it distributed)": _docs_concurrency(),
        ".env.example": _env_concurrency(),
    }
    for source, commands in (
        ("deploy/README.md", deploy_readme_worker_commands()),
        ("docker-compose.yml", compose_worker_commands(compose_environment())),
        ("docker-compose.yml without .env", compose_worker_commands({})),
        ("deploy/k8s", k8s_worker_commands()),
    ):
        sources[source] = {queue: command_option(argv, "--concurrency") for queue, argv in commands.items()}
    assert set(sources["docs/fleet.md (Running it distributed)"]) == set(QUEUE_ROLES)
    # KEDA's target backlog per learn replica is, as its comment says, a worker's slots twice over.
    (scaled,) = k8s_kind("ScaledObject").values()
    autoscaling = (K8S / "learn-autoscaling.yaml").read_text()
    (slots,) = found(r"\(--concurrency (\d+)\) twice over", autoscaling, "learn-autoscaling.yaml")
    (trigger,) = scaled["spec"]["triggers"]
    sources["deploy/k8s/learn-autoscaling.yaml"] = {"learn": slots}
    sources["deploy/k8s/learn-autoscaling.yaml listLength / 2"] = {
        "learn": str(int(trigger["metadata"]["listLength"]) // 2)
    }

    for queue in QUEUE_ROLES:
        stated = {source: threads[queue] for source, threads in sources.items() if queue in threads}
        one_value(stated, f"--concurrency of the {queue} workers")
    assert one_value({s: t["write"] for s, t in sources.items() if "write" in t}, "write threads") == "1"


# -- ports -----------------------------------------------------------------------------------


def test_the_console_has_one_port_everywhere() -> None:
    compose_console = compose_services()["console"]
    (deployment,) = k8s_kind("Deployment")["console"]["spec"]["template"]["spec"]["containers"]
    (service_port,) = k8s_kind("Service")["console"]["spec"]["ports"]
    host_default, container_port = interpolate(compose_console["ports"][0], {}).split(":")
    deploy_readme = DEPLOY_README.read_text()
    stated = {
        "docker-compose.yml console --port": command_option(compose_console["command"], "--port"),
        "docker-compose.yml container port": container_port,
        "docker-compose.yml host port default": host_default,
        "docker-compose.yml health check": found(
            r"127\.0\.0\.1:(\d+)/", compose_console["healthcheck"]["test"][-1], "compose"
        )[0],
        ".env.example CONSOLE_PORT": read_env_example()["CONSOLE_PORT"],
        "deploy/k8s console --port": command_option(deployment["command"], "--port"),
        "deploy/k8s containerPort": deployment["ports"][0]["containerPort"],
        "deploy/k8s Service port": service_port["port"],
        "deploy/README.md port-forward": found(
            r"port-forward svc/console (\d+)", deploy_readme, "deploy/README.md"
        )[0],
        "ace-workers console --port default": str(DEFAULT_CONSOLE_PORT),
    }
    for number, port in enumerate(found(r"console --port (\d+)", deploy_readme, "deploy/README.md")):
        stated[f"deploy/README.md console --port ({number})"] = port
    console_page = section_text("docs/console.md", "# The web console")
    console_url = r"ace-workers console +# http://127\.0\.0\.1:(\d+)/"
    stated["docs/console.md URL"] = found(console_url, console_page, "docs/console.md")[0]
    one_value(stated, "the console's port")


def test_flower_has_one_port_everywhere() -> None:
    compose_flower = compose_services()["flower"]
    (deployment,) = k8s_kind("Deployment")["flower"]["spec"]["template"]["spec"]["containers"]
    (service_port,) = k8s_kind("Service")["flower"]["spec"]["ports"]
    host_default, container_port = interpolate(compose_flower["ports"][0], {}).split(":")
    stated = {
        "docker-compose.yml flower --port": command_option(compose_flower["command"], "--port"),
        "docker-compose.yml container port": container_port,
        "docker-compose.yml host port default": host_default,
        "docker-compose.yml health check": found(
            r"127\.0\.0\.1:(\d+)/", compose_flower["healthcheck"]["test"][-1], "compose"
        )[0],
        ".env.example FLOWER_PORT": read_env_example()["FLOWER_PORT"],
        "deploy/k8s flower --port": command_option(deployment["command"], "--port"),
        "deploy/k8s containerPort": deployment["ports"][0]["containerPort"],
        "deploy/k8s Service port": service_port["port"],
    }
    deploy_readme = DEPLOY_README.read_text()
    for number, port in enumerate(found(r"flower --port (\d+)", deploy_readme, "deploy/README.md")):
        stated[f"deploy/README.md flower --port ({number})"] = port
    stated["deploy/README.md Service"] = found(r"Service on port (\d+)", deploy_readme, "deploy/README.md")[0]
    stated["deploy/README.md port-forward"] = found(
        r"port-forward svc/flower (\d+)", deploy_readme, "deploy/README.md"
    )[0]
    fleet = section_text("docs/fleet.md", "## Run it as a fleet")
    page = "docs/fleet.md"
    stated[f"{page} Flower URL"] = found(r"Flower is at http://localhost:(\d+)", fleet, page)[0]
    stated[f"{page} flower --port"] = found(r"ace-workers flower --port (\d+)", fleet, page)[0]
    one_value(stated, "Flower's port")


def test_worker_metrics_have_one_port_everywhere() -> None:
    stated: dict[str, Any] = {}
    for name, service in compose_services().items():
        if is_worker(service.get("command", [])):
            stated[f"docker-compose.yml {name} --metrics-port"] = command_option(
                service["command"], "--metrics-port"
            )
            (url,) = found(r"127\.0\.0\.1:(\d+)/healthz", service["healthcheck"]["test"][-1], "compose")
            stated[f"docker-compose.yml {name} health check"] = url
    workloads = k8s_workloads()
    for name, container in k8s_containers():
        if is_worker(container["command"]):
            stated[f"deploy/k8s {name} --metrics-port"] = command_option(
                container["command"], "--metrics-port"
            )
            stated[f"deploy/k8s {name} containerPort"] = next(
                p["containerPort"] for p in container["ports"] if p["name"] == "metrics"
            )
            annotations = workloads[name]["spec"]["template"]["metadata"]["annotations"]
            stated[f"deploy/k8s {name} prometheus.io/port"] = annotations["prometheus.io/port"]
    deploy_readme = DEPLOY_README.read_text()
    for number, port in enumerate(found(r"--metrics-port (\d+)", deploy_readme, "deploy/README.md")):
        stated[f"deploy/README.md --metrics-port ({number})"] = port
    stated["deploy/README.md health check"] = found(
        r"http://127\.0\.0\.1:(\d+)/healthz", deploy_readme, "deploy/README.md"
    )[0]
    stated["deploy/README.md metrics port"] = found(
        r"metrics on port (\d+)", deploy_readme, "deploy/README.md"
    )[0]
    metrics = section_text("docs/operations.md", "## Metrics and logs")
    page = "docs/operations.md"
    stated[f"{page} --metrics-port"] = found(r"worker --metrics-port (\d+)", metrics, page)[0]
    stated[f"{page} metrics URL"] = found(r"http://HOST:(\d+)/metrics", metrics, page)[0]
    one_value(stated, "the workers' metrics port")


# -- queues, settings and their defaults -------------------------------------------------------


def test_one_queue_prefix_and_learn_queue_name_everywhere() -> None:
    config = one_value(
        {name: doc["data"]["ACE_QUEUE_PREFIX"] for name, doc in k8s_kind("ConfigMap").items()},
        "the ConfigMap",
    )
    learn_env = compose_services()["worker-learn"]["environment"]
    prefix = one_value(
        {
            "WorkerSettings": WorkerSettings().queue_prefix,
            ".env.example": read_env_example()["ACE_QUEUE_PREFIX"],
            "docker-compose.yml default": interpolate(learn_env["ACE_QUEUE_PREFIX"], {}),
            "deploy/k8s ConfigMap": config,
        },
        "the queue prefix",
    )
    learn_queue = WorkerSettings(queue_prefix=prefix).queue_names()["learn"]
    (scaled,) = k8s_kind("ScaledObject").values()
    (trigger,) = scaled["spec"]["triggers"]
    one_value(
        {
            "WorkerSettings": learn_queue,
            "deploy/k8s learn-autoscaling.yaml listName": trigger["metadata"]["listName"],
            "deploy/README.md": found(
                r"the Redis list `([\w.]+)`", DEPLOY_README.read_text(), "deploy/README.md"
            )[0],
        },
        "the learn queue's name",
    )


def _setting_names() -> set[str]:
    return {env_name(field.name) for field in dataclasses.fields(WorkerSettings)}


@pytest.mark.parametrize(
    "path", [*COMPOSE_FILES, ENV_EXAMPLE, *K8S_FILES, DEPLOY_README], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_ace_variable_a_deployment_file_names_is_a_setting(path: Any) -> None:
    named = set(re.findall(r"\bACE_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    assert named - _setting_names() == set(), f"{path.name} names variables WorkerSettings does not read"


def test_env_example_states_the_defaults_of_workersettings_and_compose() -> None:
    example = read_env_example()
    defaults = WorkerSettings()
    for name, value in example.items():
        field = name.removeprefix("ACE_").lower()
        default = getattr(defaults, field, None) if name.startswith("ACE_") else None
        if default in (None, "") or not value:  # one of the two states no default
            continue
        assert getattr(WorkerSettings.from_env({name: value}), field) == default, (
            f".env.example: {name}={value}, WorkerSettings' default is {default!r}"
        )
    for path in COMPOSE_FILES:
        for match in COMPOSE_VARIABLE.finditer(path.read_text()):
            if match["op"] == ":-":
                stated = example[match["name"]]
                assert stated == match["arg"], f"{path.name}: {match[0]}, but .env.example says {stated!r}"


def test_the_defaults_the_docs_state_are_the_settings_defaults() -> None:
    defaults = WorkerSettings()
    stated = []
    for text in [page_text(page) for page in pages()] + [DEPLOY_README.read_text()]:
        stated += re.findall(r"`(ACE_[A-Z0-9_]+)` \((\d[\d.]*)\)", text)  # `ACE_X` (300)
        stated += re.findall(r"`(ACE_[A-Z0-9_]+)`, default (\d[\d.]*)", text)  # `ACE_X`, default 1
    stated = [(name, value) for name, value in stated if not name.startswith(IGNORED_PREFIXES)]
    assert len(stated) >= 5, stated  # the docs state dozens; none found means the regex broke
    for name, value in stated:
        default = getattr(defaults, name.removeprefix("ACE_").lower())
        assert float(value) == float(default), f"the docs say {name} defaults to {value}, it is {default}"


# -- image, names and secrets ---------------------------------------------------------------


def test_one_image_named_after_the_package_and_its_version() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    stated: dict[str, Any] = {
        "pyproject.toml": f"{project['name']}:{project['version']}",
        ".env.example FLEET_IMAGE": read_env_example()["FLEET_IMAGE"],
        "deploy/README.md docker build": found(
            r"docker build .* -t REGISTRY/(\S+) ", DEPLOY_README.read_text(), "deploy/README.md"
        )[0],
    }
    for name, service in compose_services().items():
        if "image" in service and name != "redis":
            stated[f"docker-compose.yml {name} default"] = interpolate(service["image"], {})
    for name, container in k8s_containers():
        stated[f"deploy/k8s {name}"] = container["image"]
    one_value(stated, "the image")


def test_the_services_and_objects_the_docs_name_exist() -> None:
    for page, heading in COMPOSE_SECTIONS:
        fleet = section_text(page, heading)
        services = set(found(r"docker compose (?:up -d --scale|exec) ([\w-]+)", fleet, page))
        services = {name.partition("=")[0] for name in services}
        assert services <= set(compose_services()), (page, services - set(compose_services()))
    documents = [doc for path in K8S_FILES for doc in load_yaml_all(path.read_text()) if doc]
    objects = {doc["metadata"]["name"] for doc in documents if "metadata" in doc}  # not kustomize's own
    named = set(found(r"`((?:ace|worker)-[a-z-]+)`", DEPLOY_README.read_text(), "deploy/README.md"))
    assert named <= objects, f"deploy/README.md names k8s objects that do not exist: {named - objects}"


def test_the_variables_the_docs_say_to_set_are_the_ones_compose_requires() -> None:
    shown = [(section_text(page, heading), page) for page, heading in COMPOSE_SECTIONS]
    header = (COMPOSE.read_text(), "docker-compose.yml")
    for text, source in (*shown, header):
        (told,) = found(r"cp \.env\.example \.env +# +(?:then )?set (.+)", text, source)
        required = required_compose_variables()
        assert set(re.findall(r"\b[A-Z][A-Z0-9_]+\b", told)) == required, (
            f"{source} says to set {told!r}; docker-compose.yml requires {sorted(required)}"
        )


# Where the deployment files and pages say how to make the first admin key: (file, its command).
FIRST_KEY_FILES = (
    "docker-compose.yml",
    ".env.example",
    "deploy/k8s/console.yaml",
    "deploy/README.md",
    "README.md",
    "docs/getting-started.md",
    "docs/fleet.md",
    "docs/console.md",
    "docs/tenants.md",
)


def test_every_file_that_deploys_the_console_makes_the_first_admin_key_with_one_command() -> None:
    # The command the console names when nobody can sign in, as every file spells it.
    stated = {"ace_workers.console.access.CREATE_KEY": CREATE_KEY}
    for path in FIRST_KEY_FILES:
        text = re.sub(r"\s+", " ", (ROOT / path).read_text().replace("#", " "))
        (command,) = set(found(r"(ace-workers key create '\*' --role admin --note \w+)", text, path))
        stated[path] = command
    one_value(stated, "the command that makes the first admin key")


def test_compose_refuses_to_start_flower_without_credentials() -> None:
    # Flower itself exits 2 without them, and restart: unless-stopped would restart it forever.
    uses = [
        m
        for path in COMPOSE_FILES
        for m in COMPOSE_VARIABLE.finditer(path.read_text())
        if m["name"] == FLOWER_AUTH
    ]
    assert uses, f"no compose file passes {FLOWER_AUTH}"
    assert all(m["op"] == ":?" for m in uses), [m[0] for m in uses]
    flower_auth = str(compose_services()["flower"]["environment"][FLOWER_AUTH])
    refusal = rf"compose would refuse: {FLOWER_AUTH}: set {FLOWER_AUTH}=user:password"
    with pytest.raises(AssertionError, match=refusal):
        interpolate(flower_auth, read_env_example())  # .env.example as shipped: the credentials blank
    assert read_env_example()[FLOWER_AUTH] == ""  # no default credentials
    (container,) = k8s_kind("Deployment")["flower"]["spec"]["template"]["spec"]["containers"]
    (auth,) = [e for e in container["env"] if e["name"] == FLOWER_AUTH]
    assert not auth["valueFrom"]["secretKeyRef"].get("optional", False), "k8s: the Secret must be required"
