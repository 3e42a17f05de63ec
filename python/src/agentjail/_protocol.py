"""The JSON-lines protocol of ``agentjail serve``, without any I/O: building requests,
decoding response lines, turning responses into results or errors. Shared by
:class:`~agentjail.Client` and :class:`~agentjail.AsyncClient`."""

from __future__ import annotations

import base64
import json
import math
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _errors as E
from ._record import Decision, Record

# serve refuses request lines over 32 MiB; a response may carry inline artifacts on top of
# the record, so the client's bound is larger. A longer line ends the connection.
DEFAULT_MAX_LINE = 64 * 1024 * 1024

ENTRYPOINTS = {"python": "main.py", "javascript": "main.js"}

FilesArg = Union[Mapping[str, Union[str, bytes]], List[Mapping[str, Any]], None]


def build_action(
    code: str,
    *,
    input: Optional[Mapping[str, Any]] = None,
    stdin: Union[str, bytes, None] = None,
    files: FilesArg = None,
    output_schema: Optional[Mapping[str, Any]] = None,
    output_mode: Optional[str] = None,
    timeout: Optional[float] = None,
    language: str = "python",
    entrypoint: Optional[str] = None,
    policy_hints: Optional[Mapping[str, Any]] = None,
    action_id: str = "py",
) -> Dict[str, Any]:
    """The action object for ``run`` and ``check`` (docs/REFERENCE.md, "The action").

    ``output_mode`` None is ``"json"`` when ``output_schema`` is given, else ``"text"``:
    a program that prints is a success, and what it printed is ``record.stdout``."""
    if output_mode is None:
        output_mode = "json" if output_schema is not None else "text"
    if not isinstance(code, str):
        raise TypeError("code must be a str")
    if not isinstance(language, str):
        raise TypeError("language must be a str")
    if input is not None and stdin is not None:
        raise ValueError("input and stdin are exclusive: input is sent as one JSON line on stdin")
    if output_mode not in ("json", "text"):
        raise ValueError("output_mode must be 'json' or 'text'")
    action: Dict[str, Any] = {
        "id": action_id,
        "language": language,
        "entrypoint": entrypoint or ENTRYPOINTS.get(language, "main.py"),
        "code": code,
    }
    if stdin is not None:
        if isinstance(stdin, (bytes, bytearray)):
            try:
                stdin = bytes(stdin).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("stdin must be UTF-8 text (the action carries it as a JSON string)") from None
        elif not isinstance(stdin, str):
            raise TypeError("stdin must be str or bytes")
        action["stdin"] = stdin
    elif input is not None:
        if not isinstance(input, Mapping):
            raise TypeError("input must be a dict (the program reads it as one JSON line)")
        action["input_payload"] = dict(input)
    elif output_mode == "json":
        # The contract's program reads one JSON object from stdin: give it an empty one.
        action["input_payload"] = {}
    else:
        # A text-mode program given nothing reads an empty stdin (serve wants one of the two).
        action["stdin"] = ""
    if files is not None:
        action["files"] = _files(files)
    if output_schema is not None:
        action["output_schema"] = dict(output_schema)
    if output_mode != "json":
        action["output_mode"] = output_mode
    hints = dict(policy_hints or {})
    if timeout is not None:
        hints["exec_timeout_seconds"] = _positive(timeout, "timeout")
    if hints:
        action["policy_hints"] = hints
    return action


def _files(files: FilesArg) -> List[Dict[str, Any]]:
    if isinstance(files, Mapping):
        out = []
        for path, content in files.items():
            if not isinstance(path, str):
                raise TypeError("files: every path must be a str")
            if isinstance(content, str):
                out.append({"path": path, "content": content})
            elif isinstance(content, (bytes, bytearray, memoryview)):
                out.append({"path": path, "content_base64": base64.b64encode(bytes(content)).decode("ascii")})
            else:
                raise TypeError(f"files[{path!r}]: content must be str or bytes")
        return out
    if isinstance(files, (list, tuple)):
        for i, f in enumerate(files):
            if not isinstance(f, Mapping):
                raise TypeError(f"files[{i}] must be a dict {{path, content | content_base64}}")
        return [dict(f) for f in files]
    raise TypeError("files must be a dict {path: str | bytes} or a list of {path, content | content_base64}")


def _positive(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise ValueError(f"{what} must be a positive number of seconds")
    return float(v) if isinstance(v, float) else v


def _non_negative(v: Any, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
        raise ValueError(f"{what} must be a number of seconds, 0 or more")
    return float(v)


def encode(req_id: int, op: str, **fields: Any) -> bytes:
    body = {"id": req_id, "op": op}
    body.update({k: v for k, v in fields.items() if v is not None})
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8") + b"\n"


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(line: bytes) -> Dict[str, Any]:
    """One response line → its object (:class:`ProtocolError` for anything else)."""
    try:
        obj = json.loads(line, parse_constant=_no_constants)
    except RecursionError:
        raise E.ProtocolError("response nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise E.ProtocolError(f"response is not JSON: {str(e)[:200]}") from None
    if not isinstance(obj, dict):
        raise E.ProtocolError("response is not a JSON object")
    return obj


def response_id(obj: Dict[str, Any]) -> Optional[int]:
    """The request id a response answers: only ints are ours (True == 1 in Python: no bools)."""
    rid = obj.get("id")
    return rid if type(rid) is int else None


_SERVER_ERRORS = {
    "unknown_session": E.UnknownSession,
    "session_busy": E.SessionBusy,
    "unknown_workspace": E.UnknownWorkspace,
    "unknown_command": E.UnknownCommand,
    "workspace_busy": E.WorkspaceBusy,
    "unauthorized": E.Unauthorized,
    "too_many_requests": E.TooManyRequests,
}


class SessionUnavailable(E.ServerError, E.SandboxUnavailable):
    """``unavailable`` on ``session_start``: no jail could be started for the session."""

    def __init__(self, code: str, message: str) -> None:
        E.ServerError.__init__(self, code, message)
        self.record = None
        self.stop_reason = message if message.startswith("sandbox_unavailable") else None


def result(op: str, obj: Dict[str, Any]) -> Any:
    """A response's result for ``op``, or the error it carries, raised."""
    if "error" in obj:
        err = obj["error"]
        if not isinstance(err, dict):
            raise E.ProtocolError("response.error: expected an object")
        code = err.get("code")
        msg = err.get("message")
        code = code[:200] if isinstance(code, str) else "unknown"
        msg = msg[:2000] if isinstance(msg, str) else ""
        if code == "unavailable":
            raise SessionUnavailable(code, msg)
        raise _SERVER_ERRORS.get(code, E.ServerError)(code, msg)
    if op.startswith("workspace_"):
        from . import _workspace

        return _workspace.result(op, obj)
    if op in ("run", "session_exec"):
        return Record.from_dict(obj.get("record"))
    if op == "check":
        return Decision.from_dict(obj.get("decision"))
    if op == "session_start":
        s = obj.get("session")
        if not isinstance(s, str) or not 0 < len(s) <= 256:
            raise E.ProtocolError("response.session: expected a session id string")
        return s
    if op == "session_close":
        c = obj.get("closed")
        if not isinstance(c, bool):
            raise E.ProtocolError("response.closed: expected a boolean")
        return c
    if op == "stats":
        s = obj.get("stats")
        if not isinstance(s, dict):
            raise E.ProtocolError("response.stats: expected an object")
        return s
    raise E.ProtocolError(f"no result for op {op!r}")
