"""The packaging tests' session fixtures: one build and one installed virtualenv per test process.

Both take seconds, so every test of tests/packaging/ shares them, and the xdist scheduler keeps
these tests on one worker (tests/support/scheduling.py).
"""

from __future__ import annotations

import pytest

from tests.support.packaging import Distributions, InstalledProject, build_distributions, install_wheel


@pytest.fixture(scope="session")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> Distributions:
    """The sdist and the wheel built from the tree."""
    return build_distributions(tmp_path_factory.mktemp("build"))


@pytest.fixture(scope="session")
def installed(distributions: Distributions, tmp_path_factory: pytest.TempPathFactory) -> InstalledProject:
    """The wheel installed, with the image's extras, in a new virtualenv outside the tree."""
    return install_wheel(distributions.wheel, tmp_path_factory.mktemp("installed"))
