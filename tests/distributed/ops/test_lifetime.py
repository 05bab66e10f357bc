"""The stop signals' handlers while an embedded Redis runs (the signals themselves: tests/cli)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from ace_workers.distributed.ops.lifetime import STOP_SIGNALS, exit_on_stop_signals


@pytest.fixture
def default_handlers() -> Iterator[None]:
    """SIGTERM and SIGHUP at their defaults for the test, put back as they were after it."""
    before = {sig: signal.signal(sig, signal.SIG_DFL) for sig in STOP_SIGNALS}
    yield
    for sig, handler in before.items():
        signal.signal(sig, handler)


def test_the_handlers_are_taken_inside_and_given_back_after(default_handlers: None) -> None:
    with exit_on_stop_signals():
        assert all(callable(signal.getsignal(sig)) for sig in STOP_SIGNALS)
    assert all(signal.getsignal(sig) is signal.SIG_DFL for sig in STOP_SIGNALS)


def test_an_ignored_hangup_stays_ignored(default_handlers: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup leaves it
    with exit_on_stop_signals():
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_a_stop_signal_raises_system_exit_with_the_shell_code(default_handlers: None) -> None:
    with pytest.raises(SystemExit) as ended, exit_on_stop_signals():
        signal.raise_signal(signal.SIGTERM)
    assert ended.value.code == 128 + signal.SIGTERM


def test_off_the_main_thread_nothing_changes(default_handlers: None) -> None:
    seen: list[object] = []

    def enter() -> None:
        with exit_on_stop_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert seen == [signal.SIG_DFL]


def test_a_hangup_goes_to_whoever_took_sigterm_since(default_handlers: None) -> None:
    """As uvicorn takes SIGTERM for its graceful shutdown while the console serves."""
    taken: list[int] = []
    with exit_on_stop_signals():
        signal.signal(signal.SIGTERM, lambda signum, frame: taken.append(signum))
        signal.raise_signal(signal.SIGHUP)
    assert taken == [signal.SIGTERM]


class SignalledWhileCollected:
    """Its ``__del__`` receives SIGTERM: the handler's SystemExit is raised where Python ignores it."""

    def __del__(self) -> None:
        signal.raise_signal(signal.SIGTERM)
        self.after = True  # a bytecode after the signal, still inside __del__


def test_a_stop_signal_whose_exit_python_swallowed_is_raised_again(default_handlers: None) -> None:
    # As seen in a learn command: the signal came while a weakref callback of importlib ran.
    swallowed: list[BaseException | None] = []

    def note(unraisable: sys.UnraisableHookArgs) -> None:
        swallowed.append(unraisable.exc_value)

    before, sys.unraisablehook = sys.unraisablehook, note
    try:
        with pytest.raises(SystemExit) as ended, exit_on_stop_signals():
            SignalledWhileCollected()  # collected at once
            time.sleep(10)  # the command running on: the signal sent again ends it
    finally:
        sys.unraisablehook = before
    assert ended.value.code == 128 + signal.SIGTERM
    assert swallowed == []  # the swallowed exit was taken up here, not printed as ignored
