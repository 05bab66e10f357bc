"""The project as a user gets it: its sdist and wheel built from the tree, the wheel installed in a
fresh virtualenv outside the tree, and its ``ace-workers`` command run there.

No step reaches the network. The build runs without isolation, on the setuptools of this
interpreter. The new virtualenv finds the dependencies already installed here through a ``.pth``
file naming this interpreter's site-packages: a plain path entry, so that folder's own ``.pth``
files are not processed and the editable install of the source tree stays invisible there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .processes import REPO

# What a build reads of the tree; deploy/Dockerfile's build stage copies the same.
BUILD_INPUTS = ("pyproject.toml", "README.md", "pipeline", "ace_workers")
PACKAGES = ("ace_workers", "pipeline")
# The extras deploy/Dockerfile installs the wheel with; the installed-wheel tests install the same.
IMAGE_EXTRAS = ("embeddings", "embedded", "console", "mcp")
BUILD_TIMEOUT = 300


def project_version() -> str:
    """The one version string: pyproject.toml's ``[project] version``."""
    with (REPO / "pyproject.toml").open("rb") as file:
        return str(tomllib.load(file)["project"]["version"])


def tracked_files(*paths: str) -> list[str]:
    """The files of the tree under ``paths`` (relative to the repository), sorted.

    Those git tracks, and new ones it does not ignore (a module not yet added is part of the
    tree being tested); caches and build output are ignored.
    """
    command = ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths]
    listed = subprocess.run(command, cwd=REPO, capture_output=True, check=True, text=True)
    return sorted({name for name in listed.stdout.split("\0") if name and (REPO / name).is_file()})


def package_data_files() -> list[str]:
    """The non-Python files of the packages in the tree: what the code reads besides its modules."""
    return [name for name in tracked_files(*PACKAGES) if not name.endswith(".py")]


def outside_env(**settings: str) -> dict[str, str]:
    """This environment without PYTHONPATH, pip's or ace-workers' settings, plus ``settings``.

    Without PYTHONPATH the source tree is not importable; without pip's settings (its
    configuration files too) no index or find-links folder is consulted.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name != "PYTHONPATH" and not name.startswith(("PIP_", "ACE_"))
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env.update(settings)
    return env


def _run(command: list[str], cwd: Path, what: str, **settings: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=cwd, env=outside_env(**settings), capture_output=True, text=True, timeout=BUILD_TIMEOUT
    )
    if done.returncode != 0:
        said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise RuntimeError(f"{what} failed ({done.returncode}):\n{said}")
    return done


@dataclass(frozen=True)
class Distributions:
    """The sdist and the wheel of one build."""

    sdist: Path
    wheel: Path

    def wheel_files(self) -> set[str]:
        """The paths the wheel holds."""
        with zipfile.ZipFile(self.wheel) as wheel:
            return set(wheel.namelist())

    def sdist_files(self) -> set[str]:
        """The paths the sdist holds, without its top folder (``ace_workers-0.1.0/``)."""
        with tarfile.open(self.sdist) as sdist:
            return {name.partition("/")[2] for name in sdist.getnames() if "/" in name}


def build_distributions(folder: Path) -> Distributions:
    """Build the sdist, then the wheel from that sdist (as ``python -m build`` does), into ``folder``.

    The build reads a copy of the tracked files of :data:`BUILD_INPUTS`, so it neither writes
    into the tree nor sees its untracked files and caches.
    """
    source = folder / "source"
    for name in tracked_files(*BUILD_INPUTS):
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    out = folder / "dist"
    command = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)]
    _run(command, folder, "python -m build")
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return Distributions(sdist, wheel)


@dataclass(frozen=True)
class InstalledProject:
    """A virtualenv outside the tree with the project installed from its wheel."""

    root: Path
    workdir: Path  # an empty folder: every command runs there, so nothing of the tree is near

    @property
    def python(self) -> Path:
        """The virtualenv's interpreter."""
        return self.root / "bin" / "python"

    @property
    def ace_workers(self) -> Path:
        """The ``ace-workers`` console script the wheel installed."""
        return self.root / "bin" / "ace-workers"

    @property
    def site_packages(self) -> Path:
        """Where the wheel was installed."""
        return self.root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"

    def env(self, **settings: str) -> dict[str, str]:
        """The environment of a command run here (see :func:`outside_env`)."""
        return outside_env(**settings)

    def run(
        self, *args: str, input: str | None = None, timeout: float = 120, **settings: str
    ) -> subprocess.CompletedProcess[str]:
        """``ace-workers ARGS`` in :attr:`workdir`, with ``settings`` (ACE_...) in its environment."""
        return subprocess.run(
            [str(self.ace_workers), *args],
            cwd=self.workdir,
            env=self.env(**settings),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def python_says(self, code: str) -> str:
        """What ``code`` prints, run by the virtualenv's interpreter in :attr:`workdir`."""
        return _run([str(self.python), "-c", code], self.workdir, "the installed interpreter").stdout


def install_wheel(wheel: Path, folder: Path, extras: tuple[str, ...] = IMAGE_EXTRAS) -> InstalledProject:
    """A new virtualenv in ``folder`` with ``wheel[extras]`` installed, its dependencies found here."""
    installed = InstalledProject(folder / "venv", folder / "work")
    installed.workdir.mkdir(parents=True)
    _run([sys.executable, "-m", "venv", "--without-pip", str(installed.root)], folder, "venv")
    # pip itself comes from here too, through the same entry.
    here = sysconfig.get_paths()["purelib"]
    (installed.site_packages / "_dependencies_of_the_test_run.pth").write_text(here + "\n")
    requirement = f"{wheel}[{','.join(extras)}]"
    _run(
        [str(installed.python), "-m", "pip", "install", "--no-index", "--quiet", requirement],
        installed.workdir,
        "pip install",
    )
    return installed
