"""Typed, frozen views of what the server answers: :class:`Record`, :class:`Stop`,
:class:`Artifact`, :class:`Result`, :class:`Decision`.

The record comes from a process on the other side of a pipe or socket, so it is parsed as
untrusted data: every field is type-checked, nothing in it is evaluated or used to look up
an attribute, strings used in messages are bounded, and any field of the wrong type raises
:class:`~agentjail.ProtocolError` naming the field. Unknown keys are kept in ``raw`` and
otherwise ignored (the record grows over time).
"""

from __future__ import annotations

import base64
import binascii
import enum
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple, Type

from . import _errors as E

# A stop reason is short ASCII (`code_runtime_error:1`, `policy_block:static_policy_violation:
# import_not_allowed:os,...`). Longer or stranger text is reported, never interpreted.
MAX_STOP_REASON = 4096


class StopKind(str, enum.Enum):
    """The family of a stop reason: the part before the first ``:``."""

    SUCCESS = "success"
    INVALID_ACTION = "invalid_action"
    INVALID_REQUEST = "invalid_request"
    POLICY_BLOCK = "policy_block"
    CODE_TIMEOUT = "code_timeout"
    CODE_CPU_LIMIT = "code_cpu_limit"
    CODE_MEMORY_LIMIT = "code_memory_limit"
    CODE_PIDS_LIMIT = "code_pids_limit"
    CODE_OUTPUT_TOO_LARGE = "code_output_too_large"
    CODE_STDERR_TOO_LARGE = "code_stderr_too_large"
    CODE_FORBIDDEN_SYSCALL = "code_forbidden_syscall"
    CODE_RUNTIME_ERROR = "code_runtime_error"
    CODE_KILLED = "code_killed"
    INVALID_CODE_OUTPUT = "invalid_code_output"
    AGENTJAIL_ERROR = "agentjail_error"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    MAX_SECONDS = "max_seconds"
    INTERRUPTED = "interrupted"
    NODE_LOST = "node_lost"
    UNKNOWN = "unknown"


_KINDS: Dict[str, StopKind] = {k.value: k for k in StopKind if k is not StopKind.UNKNOWN}

_ERRORS: Dict[StopKind, Type[E.StoppedError]] = {
    StopKind.INVALID_ACTION: E.InvalidAction,
    StopKind.INVALID_REQUEST: E.InvalidRequest,
    StopKind.POLICY_BLOCK: E.PolicyBlocked,
    StopKind.CODE_TIMEOUT: E.CodeTimeout,
    StopKind.CODE_CPU_LIMIT: E.ResourceLimit,
    StopKind.CODE_MEMORY_LIMIT: E.ResourceLimit,
    StopKind.CODE_PIDS_LIMIT: E.ResourceLimit,
    StopKind.CODE_OUTPUT_TOO_LARGE: E.ResourceLimit,
    StopKind.CODE_STDERR_TOO_LARGE: E.ResourceLimit,
    StopKind.CODE_FORBIDDEN_SYSCALL: E.ForbiddenSyscall,
    StopKind.CODE_RUNTIME_ERROR: E.CodeRuntimeError,
    StopKind.CODE_KILLED: E.CodeKilled,
    StopKind.INVALID_CODE_OUTPUT: E.InvalidOutput,
    StopKind.AGENTJAIL_ERROR: E.AgentjailInternalError,
    StopKind.SANDBOX_UNAVAILABLE: E.SandboxUnavailable,
    StopKind.MAX_SECONDS: E.BudgetExceeded,
    StopKind.INTERRUPTED: E.Interrupted,
    StopKind.NODE_LOST: E.NodeLost,
    StopKind.UNKNOWN: E.UnknownStop,
}


@dataclass(frozen=True)
class Stop:
    """A stop reason split in two: ``kind`` (a :class:`StopKind`) and ``detail`` (the text
    after the first ``:``, e.g. ``"1"`` for ``code_runtime_error:1``, or None)."""

    kind: StopKind
    detail: Optional[str]
    reason: str

    @classmethod
    def parse(cls, reason: str) -> "Stop":
        head, sep, tail = reason.partition(":")
        kind = _KINDS.get(head, StopKind.UNKNOWN) if _plain(head) else StopKind.UNKNOWN
        return cls(kind=kind, detail=tail if sep else None, reason=reason)

    @property
    def error_class(self) -> Type[E.StoppedError]:
        return _ERRORS.get(self.kind, E.UnknownStop)


def _plain(s: str) -> bool:
    return 0 < len(s) <= 64 and all(c.isascii() and (c.islower() or c == "_") for c in s)


@dataclass(frozen=True)
class Artifact:
    """A file the program left in ``/app/out``. ``content`` is the decoded bytes when the
    record carried them inline (``content_base64``), else None."""

    path: str
    bytes: Optional[int]
    sha256: Optional[str]
    media_type: Optional[str]
    content: Optional[bytes] = field(default=None, repr=False)


#: The image formats a result carries base64 (decoded by :class:`Result`).
_IMAGE_FORMATS = ("image/png", "image/jpeg", "image/gif", "image/webp")


@dataclass(frozen=True)
class Result:
    """One rich result (``record.results[i]``): a MIME bundle the program displayed with
    ``display(obj)``, ``plt.show()`` or a session call's last expression. agentjail typed
    every format from its content (a ``png`` is PNG bytes); the bundle is the program's own
    output, like stdout. ``data`` maps each format to its text (images base64, as sent)."""

    data: Dict[str, str] = field(repr=False)

    def formats(self) -> Tuple[str, ...]:
        """The MIME types this result carries, e.g. ``("image/png", "text/plain")``."""
        return tuple(self.data)

    def _image(self, mime: str) -> Optional[bytes]:
        v = self.data.get(mime)
        return None if v is None else base64.b64decode(v, validate=True)

    @property
    def text(self) -> Optional[str]:
        """``text/plain``: the object's repr."""
        return self.data.get("text/plain")

    @property
    def html(self) -> Optional[str]:
        return self.data.get("text/html")

    @property
    def markdown(self) -> Optional[str]:
        return self.data.get("text/markdown")

    @property
    def latex(self) -> Optional[str]:
        return self.data.get("text/latex")

    @property
    def svg(self) -> Optional[str]:
        return self.data.get("image/svg+xml")

    @property
    def json(self) -> Any:
        """``application/json``, parsed (None when absent)."""
        import json

        v = self.data.get("application/json")
        return None if v is None else json.loads(v)

    @property
    def png(self) -> Optional[bytes]:
        """``image/png``, decoded: bytes that start with the PNG signature."""
        return self._image("image/png")

    @property
    def jpeg(self) -> Optional[bytes]:
        return self._image("image/jpeg")

    @property
    def gif(self) -> Optional[bytes]:
        return self._image("image/gif")

    @property
    def webp(self) -> Optional[bytes]:
        return self._image("image/webp")

    def __repr__(self) -> str:
        return f"Result(formats={self.formats()!r})"


@dataclass(frozen=True)
class Record:
    """One run's record. ``raw`` is the whole dict as the server sent it."""

    run_id: Optional[str]
    status: str
    stop_reason: str
    stop: Stop
    phase: Optional[str]
    output: Optional[Dict[str, Any]]
    stdout: str
    stderr: str
    exit_code: Optional[int]
    signal: Optional[Any]
    error: Optional[Dict[str, Any]]
    artifacts: Tuple[Artifact, ...]
    wall_ms: Optional[float]
    cpu_ms: Optional[float]
    peak_memory_bytes: Optional[int]
    stdout_truncated: bool
    stderr_truncated: bool
    value: Optional[str]
    session: Optional[Dict[str, Any]]
    jail_start: Optional[str]
    cached: bool
    raw: Dict[str, Any] = field(repr=False, compare=False)
    #: The Ray node id that ran it, on a record from :mod:`agentjail.fleet` (else None).
    node: Optional[str] = None
    #: The rich results the program displayed (``record["results"]``), in order.
    results: Tuple[Result, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the run succeeded (``status == "ok"``)."""
        return self.status == "ok"

    def raise_for_status(self) -> "Record":
        """Return self when ok; otherwise raise the :class:`~agentjail.StoppedError`
        subclass of the stop reason's family (the record attached)."""
        if self.ok:
            return self
        raise self.stop.error_class(self)

    @classmethod
    def from_dict(cls, d: Any) -> "Record":
        """Parse a record, checking every field's type (:class:`ProtocolError` if wrong)."""
        if not isinstance(d, dict):
            raise E.ProtocolError(f"record: expected an object, got {_tname(d)}")
        status = _req_str(d, "status", "record")
        if status not in ("ok", "stopped"):
            raise E.ProtocolError(f"record.status: expected 'ok' or 'stopped', got {_short(status)}")
        reason = _req_str(d, "stop_reason", "record")
        if len(reason) > MAX_STOP_REASON:
            raise E.ProtocolError(f"record.stop_reason: {len(reason)} characters (at most {MAX_STOP_REASON})")
        if status == "ok" and reason != "success" or status == "stopped" and reason == "success":
            raise E.ProtocolError(f"record: status {status!r} with stop_reason {_short(reason)}")
        ex = _opt(d, "execution", dict, "record") or {}
        output = _opt(d, "output", dict, "record")
        error = _opt(d, "error", dict, "record")
        arts = _opt(d, "artifacts", list, "record") or []
        results = _opt(d, "results", list, "record") or []
        return cls(
            run_id=_opt(d, "run_id", str, "record"),
            status=status,
            stop_reason=reason,
            stop=Stop.parse(reason),
            phase=_opt(d, "phase", str, "record"),
            output=output,
            stdout=_opt(ex, "stdout", str, "record.execution") or "",
            stderr=_opt(ex, "stderr", str, "record.execution") or "",
            exit_code=_opt_int(ex, "exit_code", "record.execution"),
            signal=_opt(ex, "signal", (str, int), "record.execution"),
            error=error,
            artifacts=tuple(_artifact(a, i) for i, a in enumerate(arts)),
            wall_ms=_opt_num(ex, "wall_ms", "record.execution"),
            cpu_ms=_opt_num(ex, "cpu_ms", "record.execution"),
            peak_memory_bytes=_opt_int(ex, "peak_memory_bytes", "record.execution"),
            stdout_truncated=_opt(ex, "stdout_truncated", bool, "record.execution") or False,
            stderr_truncated=_opt(ex, "stderr_truncated", bool, "record.execution") or False,
            value=_opt(d, "value", str, "record"),
            session=_opt(d, "session", dict, "record"),
            jail_start=_opt(d, "jail_start", str, "record"),
            cached=bool(isinstance(d.get("cache"), dict) and d["cache"].get("hit") is True),
            raw=d,
            results=tuple(_result(b, i) for i, b in enumerate(results)),
        )


@dataclass(frozen=True)
class Decision:
    """What ``check`` says about an action: ``decision`` is ``"allow"`` or ``"deny"``."""

    decision: str
    reason: Optional[str]
    message: Optional[str]
    violations: Tuple[Any, ...]
    raw: Dict[str, Any] = field(repr=False, compare=False)

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    @classmethod
    def from_dict(cls, d: Any) -> "Decision":
        if not isinstance(d, dict):
            raise E.ProtocolError(f"decision: expected an object, got {_tname(d)}")
        decision = _req_str(d, "decision", "decision")
        if decision not in ("allow", "deny"):
            raise E.ProtocolError(f"decision.decision: expected 'allow' or 'deny', got {_short(decision)}")
        reason = _opt(d, "reason", str, "decision")
        if reason is not None and len(reason) > MAX_STOP_REASON:
            raise E.ProtocolError(f"decision.reason: {len(reason)} characters (at most {MAX_STOP_REASON})")
        return cls(
            decision=decision,
            reason=reason,
            message=_opt(d, "message", str, "decision"),
            violations=tuple(_opt(d, "violations", list, "decision") or ()),
            raw=d,
        )


def _artifact(a: Any, i: int) -> Artifact:
    where = f"record.artifacts[{i}]"
    if not isinstance(a, dict):
        raise E.ProtocolError(f"{where}: expected an object, got {_tname(a)}")
    content = None
    b64 = _opt(a, "content_base64", str, where)
    if b64 is not None:
        try:
            content = base64.b64decode(b64, validate=True)
        except (binascii.Error, ValueError) as e:
            raise E.ProtocolError(f"{where}.content_base64: not base64 ({e})") from None
    return Artifact(
        path=_req_str(a, "path", where),
        bytes=_opt_int(a, "bytes", where),
        sha256=_opt(a, "sha256", str, where),
        media_type=_opt(a, "media_type", str, where),
        content=content,
    )


def _result(b: Any, i: int) -> Result:
    where = f"record.results[{i}]"
    if not isinstance(b, dict):
        raise E.ProtocolError(f"{where}: expected an object, got {_tname(b)}")
    for mime, v in b.items():
        if not isinstance(v, str):
            raise E.ProtocolError(f"{where}.{_short(mime)}: expected a string, got {_tname(v)}")
        if mime in _IMAGE_FORMATS:
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError) as e:
                raise E.ProtocolError(f"{where}.{mime}: not base64 ({e})") from None
    return Result(data=dict(b))


def _tname(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "null"}.get(type(v), "a value")


def _short(s: str) -> str:
    return repr(s[:80] + ("…" if len(s) > 80 else ""))


def _req_str(d: Mapping[str, Any], key: str, where: str) -> str:
    v = d.get(key)
    if not isinstance(v, str):
        raise E.ProtocolError(f"{where}.{key}: expected a string, got {_tname(v)}")
    return v


def _opt(d: Mapping[str, Any], key: str, typ: Any, where: str) -> Any:
    v = d.get(key)
    if v is None:
        return None
    # bool is an int in Python: a boolean where a number is wanted is a type error.
    if not isinstance(v, typ) or (isinstance(v, bool) and bool not in _tuple(typ)):
        raise E.ProtocolError(f"{where}.{key}: expected {_want(typ)}, got {_tname(v)}")
    return v


def _opt_int(d: Mapping[str, Any], key: str, where: str) -> Optional[int]:
    return _opt(d, key, int, where)


def _opt_num(d: Mapping[str, Any], key: str, where: str) -> Optional[float]:
    v = _opt(d, key, (int, float), where)
    return None if v is None else float(v)


def _tuple(typ: Any) -> Tuple[Any, ...]:
    return typ if isinstance(typ, tuple) else (typ,)


def _want(typ: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
             int: "an integer", float: "a number"}
    return " or ".join(names.get(t, "a value") for t in _tuple(typ))
