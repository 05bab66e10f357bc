"""browser-use: run its ``Agent`` with the skillbook in the task, and learn from its runs.

Needs the ``browser-use`` extra (``pip install 'ace-workers[browser-use]'``)
to run an agent; a step that runs one fails at construction, naming the
extra, when it is not installed. Converting a recorded run needs nothing:
the history is read by its attributes, and importing this package never
imports browser-use.

- :class:`BrowserExecuteStep` -> :class:`BrowserResult` -> :class:`BrowserToTrace`:
  the execute head of the :class:`~ace_workers.runners.BrowserUse` runner.
- :func:`browser_history_to_trace`: a recorded ``AgentHistoryList`` as a trace
  (for :class:`~ace_workers.runners.TraceAnalyser`; ``Producer.enqueue_traces``
  converts one with it).
"""

from ...traces.browser_use import (
    BrowserResult,
    BrowserToTrace,
    browser_history_to_trace,
    browser_result_to_trace,
)
from .execute import BrowserExecuteStep

__all__ = [
    # execute -> convert
    "BrowserExecuteStep",
    "BrowserResult",
    "BrowserToTrace",
    # recorded runs
    "browser_history_to_trace",
    "browser_result_to_trace",
]
