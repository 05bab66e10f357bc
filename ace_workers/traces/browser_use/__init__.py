"""browser-use runs as traces: a :class:`BrowserResult`, a recorded ``AgentHistoryList`` or its saved JSON.

Reads the history by its attributes: importing this package never imports browser-use.
"""

from .result import BrowserResult
from .to_trace import BrowserToTrace, browser_history_to_trace, browser_result_to_trace

__all__ = ["BrowserResult", "BrowserToTrace", "browser_history_to_trace", "browser_result_to_trace"]
