"""Streaming: ``on_stdout=`` / ``on_stderr=`` callbacks, called with each chunk of the
program's output as the server reads it, in order, before ``run()`` / ``exec()`` returns.

The server sends ``{"id", "event": "stdout" | "stderr", "data"}`` lines before the record
(JSON lines: ``"stream": true``; HTTP: ``?stream=1``, the same objects as JSON lines). The
chunks of one stream concatenated are the record's ``stdout`` (or ``stderr``).

Callbacks run on the thread (or, async, the task) that made the request, never on the
connection's reader. An exception in a callback stops the later callbacks of that request;
the request still runs to its record, and then the exception is raised from ``run()`` /
``exec()`` (the record is lost to the caller; the job was not stopped).
"""

import inspect
from typing import Any, Callable, Dict, Optional, Tuple

from . import _errors as E

Callback = Callable[[str], Any]


class Dispatch:
    """The callbacks of one request: ``(event, data)`` → the callback for that stream."""

    def __init__(self, on_stdout: Optional[Callback], on_stderr: Optional[Callback]) -> None:
        for name, f in (("on_stdout", on_stdout), ("on_stderr", on_stderr)):
            if f is not None and not callable(f):
                raise TypeError(f"{name} must be callable (called with each str chunk)")
        self.callbacks: Dict[str, Optional[Callback]] = {"stdout": on_stdout, "stderr": on_stderr}
        self.error: Optional[BaseException] = None

    def __call__(self, event: str, data: str) -> None:
        f = self.callbacks.get(event)
        if f is None or self.error is not None:
            return
        try:
            f(data)
        except Exception as e:  # raised once the record has come: see the module's doc
            self.error = e

    async def acall(self, event: str, data: str) -> None:
        """As ``__call__``, awaiting what an async callback returns."""
        f = self.callbacks.get(event)
        if f is None or self.error is not None:
            return
        try:
            r = f(data)
            if inspect.isawaitable(r):
                await r
        except Exception as e:
            self.error = e

    def done(self, result: Any) -> Any:
        """The request's result, or the first callback's exception."""
        if self.error is not None:
            err, self.error = self.error, None
            raise err
        return result


def dispatch(on_stdout: Optional[Callback], on_stderr: Optional[Callback]) -> Optional[Dispatch]:
    """A :class:`Dispatch`, or None when neither callback is given (no streaming asked)."""
    if on_stdout is None and on_stderr is None:
        return None
    return Dispatch(on_stdout, on_stderr)


def event(obj: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """An event line's ``(event, data)``; None when ``obj`` is not an event (the final
    line). A malformed event is a :class:`ProtocolError`."""
    if "event" not in obj:
        return None
    ev, data = obj.get("event"), obj.get("data")
    if ev not in ("stdout", "stderr") or not isinstance(data, str):
        raise E.ProtocolError("an event line is {\"id\", \"event\": \"stdout\"|\"stderr\", \"data\": str}")
    return ev, data
