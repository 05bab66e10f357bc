"""Where the OS boundary cannot be set up, the Recursive Reflector refuses to start unless told otherwise."""

from __future__ import annotations

import pytest

from ace_workers.rr import (
    Isolation,
    RRConfig,
    RRStep,
    Sandbox,
    SandboxUnavailableError,
    find_boundary,
)
from ace_workers.sim import SimulatedLLM
from tests.support.sandbox import boundary_missing

pytestmark = pytest.mark.slow  # the boundary check starts a real sandbox


def test_this_machine_has_the_boundary_the_tests_rely_on() -> None:
    assert find_boundary().bwrap.endswith("bwrap")


def test_a_sandbox_without_its_boundary_refuses_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with boundary_missing(monkeypatch), pytest.raises(SandboxUnavailableError) as raised:
        Sandbox()
    assert raised.value.missing == "bubblewrap (bwrap) is not installed"


def test_the_refusal_is_one_line_naming_the_way_out(monkeypatch: pytest.MonkeyPatch) -> None:
    with boundary_missing(monkeypatch), pytest.raises(SandboxUnavailableError) as raised:
        Sandbox()
    assert str(raised.value) == (
        "the Recursive Reflector's sandbox cannot be isolated here: bubblewrap (bwrap) is not installed; "
        "install bubblewrap and libseccomp (or set ACE_RR_UNSAFE_SANDBOX=1 to run it behind the "
        "in-process guards only)"
    )


def test_the_recursive_reflector_refuses_to_be_built_without_the_boundary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with boundary_missing(monkeypatch), pytest.raises(SandboxUnavailableError):
        RRStep(SimulatedLLM())


def test_unsafe_isolation_runs_behind_the_guards_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    with boundary_missing(monkeypatch):
        rr = RRStep(SimulatedLLM(), RRConfig(isolation=Isolation.OS_OR_GUARDS))
        result = rr.sandbox.run("import os\nFINAL(os.getcwd())")
    assert rr.sandbox.boundary is None
    assert result.final_value != "/sandbox/work"  # the host path: no mount namespace


def test_the_guards_still_refuse_behind_the_boundary() -> None:
    result = Sandbox().run("import socket\nsocket.create_connection(('127.0.0.1', 9))")
    assert result.error == "PermissionError: network access is disabled in the sandbox"
