"""A child server that lives no longer than the process that started it.

Two ways a process ends without its ``finally`` blocks running, each covered here:

- SIGTERM and SIGHUP (a supervisor, ``timeout``, a closed terminal): Python's default for both
  ends the process at once. :func:`exit_on_stop_signals` turns them into ``SystemExit`` in the
  main thread, as Ctrl-C becomes ``KeyboardInterrupt``, so the with-blocks unwind and stop what
  they started.
- SIGKILL, or a crash: nothing runs in the process any more. :func:`parent_death_signal` asks
  the kernel (Linux ``PR_SET_PDEATHSIG``) to send the child SIGTERM when its parent dies.
"""

from __future__ import annotations

import _thread
import ctypes
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["STOP_SIGNALS", "exit_on_stop_signals", "parent_death_signal"]

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


@contextmanager
def exit_on_stop_signals() -> Iterator[None]:
    """While inside, SIGTERM and SIGHUP raise ``SystemExit(128 + signal)`` in the main thread.

    Only a signal left at its default is taken: one ignored (``nohup`` ignores SIGHUP) stays
    ignored, and one an application handles stays its own. A SIGHUP while another handler
    has taken SIGTERM (uvicorn, for its graceful shutdown) is passed to it as SIGTERM. A
    second signal while the first unwinds is dropped, so it cannot cut the clean-up short.
    A ``SystemExit`` raised where Python ignores exceptions (a weakref callback or ``__del__``
    running when the signal came) is raised again at the next chance instead of being lost.
    Off the main thread (where no handler can be set) nothing changes. The handlers before
    are restored on the way out.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False
    raised: list[tuple[SystemExit, int]] = []  # the exit raised and its signal, known if swallowed

    def raise_exit(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        if stopping:
            return
        on_term = signal.getsignal(signal.SIGTERM)
        if signum != signal.SIGTERM and callable(on_term) and on_term is not raise_exit:
            # Whoever took SIGTERM since (uvicorn under the console) shuts down gracefully, then
            # gives it back here: a hangup goes that way too, instead of cutting through it.
            signal.raise_signal(signal.SIGTERM)
            return
        stopping = True
        logger.info("%s received: stopping", signal.Signals(signum).name)
        exit_ = SystemExit(128 + signum)
        raised[:] = [(exit_, signum)]
        raise exit_

    def raise_again_if_swallowed(unraisable: sys.UnraisableHookArgs) -> None:
        nonlocal stopping
        if raised and unraisable.exc_value is raised[0][0]:
            # The handler ran inside a weakref callback or __del__, where Python prints an
            # exception and goes on: the command would run on as if no signal had come. Sent again
            # from a new thread, not waited for (Thread.start would wait, and the handler would run
            # inside this hook, which swallows too): it lands once the hook has returned.
            stopping = False
            _thread.start_new_thread(os.kill, (os.getpid(), raised[0][1]))
            return
        previous_hook(unraisable)

    previous = {
        sig: signal.signal(sig, raise_exit) for sig in STOP_SIGNALS if signal.getsignal(sig) is signal.SIG_DFL
    }
    previous_hook, sys.unraisablehook = sys.unraisablehook, raise_again_if_swallowed
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def parent_death_signal(sig: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` after which the kernel sends ``sig`` to the child when this process dies.

    Linux only (None elsewhere: there a child outlives a SIGKILLed parent). Strictly, the kernel
    sends it when the *thread* that started the child ends: start long-lived servers from the
    main thread (the CLI does).
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        # Looked up here, not in the child: a forked child of a threaded process should do no
        # more than call it (loading a library there could wait on a lock no thread will release).
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    arguments = (ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(sig), ctypes.c_ulong(0))

    def die_with_parent() -> None:
        prctl(*arguments, ctypes.c_ulong(0), ctypes.c_ulong(0))
        if os.getppid() != parent:  # the parent died before the request was in place
            os._exit(1)

    return die_with_parent
