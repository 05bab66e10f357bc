"""A producer that holds an API key and intake's URL, never the fleet's Redis URL.

:class:`HttpProducer` POSTs traces to ``ace-workers intake`` (``POST /v1/traces``) with the
standard library's HTTP client. Each batch goes with an ``Idempotency-Key``: a POST retried
after a lost answer, a 5xx or a 429 carries the same key, so the fleet makes one batch of it.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import (
    IntakeBusyError,
    IntakeError,
    IntakeForbiddenError,
    IntakeRequestError,
    IntakeUnauthorizedError,
    IntakeUnavailableError,
)

__all__ = ["HttpProducer", "IntakeBatch"]

logger = logging.getLogger(__name__)

# How a refusal's status becomes the project's error (5xx and no answer: IntakeUnavailableError).
_REFUSALS: dict[int, type[IntakeError]] = {
    401: IntakeUnauthorizedError,
    403: IntakeForbiddenError,
    404: IntakeForbiddenError,  # another tenant's skillbook is answered as one that does not exist
}
# The longest wait between two tries, whatever Retry-After says.
MAX_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class IntakeBatch:
    """What intake answered a POST: the batch, and where its status is (``replayed``: a retry's answer)."""

    batch_id: str
    skillbook: str
    traces: int
    epochs: int
    status_url: str
    replayed: bool


class HttpProducer:
    """Send traces to intake at ``url`` (``http://host:8710``) with the API key ``api_key``.

    ``retries``: tries after the first when intake is busy (429), failing (5xx) or unreachable,
    waiting Retry-After (else ``backoff`` seconds, doubling). Other refusals raise at once.
    """

    def __init__(
        self,
        url: str,
        api_key: str,
        *,
        timeout: float = 30.0,
        retries: int = 5,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"intake URL must be http:// or https://host[:port], not {url!r}")
        self.url = url.rstrip("/")
        # Kept private: only intake sees it, in the Authorization header.
        self._api_key = api_key
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep

    def enqueue_traces(
        self,
        traces: Iterable[Any],
        skillbook: str = "default",
        epochs: int = 1,
        *,
        recipe: str = "trace_analyser",
        idempotency_key: str | None = None,
    ) -> IntakeBatch:
        """Send ``traces`` (JSON objects) as one batch learning into ``skillbook``; intake's answer.

        ``idempotency_key`` (default: a new one per call): the same key sent again within a day
        answers the first batch, so a caller that retries on its own passes the same key.

        Raises:
            ValueError: a trace that is not JSON (naming which), before anything is sent.
            IntakeError: intake refused the batch, or did not take it through every retry.
        """
        body = _jsonl(traces)
        query = urllib.parse.urlencode({"skillbook": skillbook, "recipe": recipe, "epochs": epochs})
        headers = {
            "Content-Type": "application/x-ndjson",
            "Idempotency-Key": idempotency_key or uuid.uuid4().hex,
        }
        answer = self._request("POST", f"/v1/traces?{query}", body, headers)
        return IntakeBatch(
            batch_id=answer["batch_id"],
            skillbook=answer["skillbook"],
            traces=answer["traces"],
            epochs=answer["epochs"],
            status_url=answer["status_url"],
            replayed=answer["replayed"],
        )

    def status(self, batch_id: str) -> dict[str, Any]:
        """The batch's state and counts, as ``GET /v1/batches/{id}`` answers them."""
        answer: dict[str, Any] = self._request(
            "GET", f"/v1/batches/{urllib.parse.quote(batch_id, safe='')}", None, {}
        )
        return answer

    def _request(self, method: str, path: str, body: bytes | None, headers: dict[str, str]) -> Any:
        """One request, tried again (same body, same headers) while intake is busy or failing."""
        wait = self.backoff
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(
                self.url + path,
                data=body,
                method=method,
                headers={**headers, "Authorization": f"Bearer {self._api_key}", "Accept": "application/json"},
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as exc:
                error = _error_of(self.url, exc)
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                error = IntakeUnavailableError(self.url, 0, "unreachable", str(reason))
            if not isinstance(error, IntakeBusyError | IntakeUnavailableError) or attempt == self.retries:
                raise error
            pause = min(error.retry_after if isinstance(error, IntakeBusyError) else wait, MAX_WAIT_SECONDS)
            logger.warning("%s; trying again in %.1f s (%d of %d)", error, pause, attempt + 1, self.retries)
            self._sleep(pause)
            wait *= 2
        raise AssertionError("unreachable: the last try raises")


def _error_of(url: str, exc: urllib.error.HTTPError) -> IntakeError:
    """The project's error for intake's refusal ``exc``, with the server's message."""
    raw = exc.read()
    try:
        answer = json.loads(raw)
        kind, message = str(answer["error"]), str(answer["message"])
    except (ValueError, KeyError, TypeError):
        kind, message = "http", raw.decode("utf-8", "replace")[:300] or str(exc.reason)
    status = exc.code
    if status == 429:
        retry_after = exc.headers.get("Retry-After", "1")
        seconds = float(retry_after) if retry_after.replace(".", "", 1).isdigit() else 1.0
        return IntakeBusyError(url, status, kind, message, retry_after=seconds)
    if status >= 500:
        return IntakeUnavailableError(url, status, kind, message)
    return _REFUSALS.get(status, IntakeRequestError)(url, status, kind, message)


def _jsonl(traces: Iterable[Any]) -> bytes:
    """The traces as JSON Lines; ValueError naming the first that is not JSON."""
    lines = []
    for number, trace in enumerate(traces, start=1):
        try:
            lines.append(json.dumps(trace, ensure_ascii=False, allow_nan=False, separators=(",", ":")))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"trace {number} is not JSON: {exc}") from None
    return ("\n".join(lines) + "\n").encode()
