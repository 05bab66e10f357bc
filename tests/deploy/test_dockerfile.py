"""deploy/Dockerfile builds the wheel in one stage and installs that wheel in the image, with the extras
tests/packaging installs it with: what can be checked with no Docker engine."""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib

from tests.support.deploy_files import DOCKERFILE, ROOT, compose_services
from tests.support.packaging import BUILD_INPUTS, IMAGE_EXTRAS

# The wheel's install line: the one file the build stage made, by its path, with extras.
WHEEL_INSTALL = re.compile(r'pip install "\$\(ls /wheels/ace_workers-\*\.whl\)\[(?P<extras>[\w,-]+)\]"')
CPU_TORCH = "pip install --index-url https://download.pytorch.org/whl/cpu torch"

# The bundled samples of the installed package, linked into the image's working folder.
SAMPLES_LINK = (
    'ln -s "$(python -c \'import sysconfig; print(sysconfig.get_paths()["purelib"])\')/ace_workers/sim/data"'
)

Instruction = tuple[str, str]  # ("RUN", "pip install ..."), continuation lines joined


def stages() -> list[list[Instruction]]:
    """The Dockerfile's stages, each its instructions from its FROM on; comments left out."""
    text = re.sub(r"\\\n\s*", " ", DOCKERFILE.read_text())
    found: list[list[Instruction]] = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        op, _, args = line.strip().partition(" ")
        if op == "FROM":
            found.append([])
        assert found, f"an instruction before the first FROM: {line}"
        found[-1].append((op, args.strip()))
    return found


def build_stage() -> list[Instruction]:
    return stages()[0]


def image_stage() -> list[Instruction]:
    return stages()[-1]


def args_of(stage: list[Instruction], op: str) -> list[str]:
    return [args for name, args in stage if name == op]


def test_two_stages_from_the_same_python() -> None:
    assert [stage[0] for stage in stages()] == [
        ("FROM", "python:3.11-slim AS build"),
        ("FROM", "python:3.11-slim"),
    ]


def test_the_build_stage_builds_the_wheel_from_what_the_packaging_tests_build_it_from() -> None:
    copied = [shlex.split(args)[:-1] for args in args_of(build_stage(), "COPY")]
    assert sorted(name for sources in copied for name in sources) == sorted(BUILD_INPUTS)
    assert args_of(build_stage(), "RUN") == ["pip wheel --no-deps --wheel-dir /wheels ."]


def test_the_image_takes_only_the_wheel_from_the_build_and_nothing_of_the_tree() -> None:
    assert args_of(image_stage(), "COPY") == ["--from=build /wheels /wheels"]
    assert args_of(image_stage(), "ADD") == []


def test_the_image_installs_the_wheel_with_the_extras_the_packaging_tests_install() -> None:
    installs = [found for args in args_of(image_stage(), "RUN") if (found := WHEEL_INSTALL.search(args))]
    assert len(installs) == 1, "one pip install of the built wheel"
    assert sorted(installs[0]["extras"].split(",")) == sorted(IMAGE_EXTRAS)


def test_every_extra_of_the_image_is_an_extra_of_the_project() -> None:
    # pip only warns of an unknown extra: a misspelled one would install nothing, silently.
    with (ROOT / "pyproject.toml").open("rb") as file:
        extras = tomllib.load(file)["project"]["optional-dependencies"]
    assert set(IMAGE_EXTRAS) <= set(extras)


def test_cpu_only_torch_is_installed_before_the_wheel() -> None:
    runs = args_of(image_stage(), "RUN")
    assert CPU_TORCH in runs
    torch = runs.index(CPU_TORCH)
    wheel = next(position for position, args in enumerate(runs) if WHEEL_INSTALL.search(args))
    assert torch < wheel  # so the embeddings extra finds torch installed and keeps the CPU build


def test_every_run_line_is_valid_sh() -> None:
    # The image's /bin/sh is dash; each RUN line (shell form) must at least parse.
    for stage in stages():
        for args in args_of(stage, "RUN"):
            parsed = subprocess.run(["sh", "-n", "-c", args], capture_output=True, text=True)
            assert parsed.returncode == 0, f"{args}: {parsed.stderr}"


def test_the_producers_input_file_is_in_the_image() -> None:
    # docker-compose.yml's producer enqueues the bundled samples by a path relative to WORKDIR.
    command = compose_services()["producer"]["command"]
    samples = command[command.index("enqueue") + 1]
    assert args_of(image_stage(), "WORKDIR") == ["/app"]
    runs = args_of(image_stage(), "RUN")
    assert any(SAMPLES_LINK in args and args.endswith(" ace_workers/sim/data") for args in runs)
    assert samples == "ace_workers/sim/data/synthetic_samples.jsonl"
