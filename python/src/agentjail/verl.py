"""A verl reward function for code: the model's program run against the task's test cases,
each case in its own jail.

verl config (its custom reward function: a file and a function name)::

    custom_reward_function.path=<site-packages>/agentjail/verl.py
    custom_reward_function.name=compute_score
    +custom_reward_function.reward_kwargs.policy=/etc/agentjail/data.toml   # optional

``compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`` is how
verl's reward managers call it; ``compute_score_batch`` is the batch form (plural names),
one :meth:`Fleet.map <agentjail.fleet.Fleet.map>` for the whole batch. ``ground_truth`` is
the test cases of verl's code datasets, ``{"inputs": [stdin, ...], "outputs": [stdout, ...]}``
(a dict or its JSON); the program is the last fenced code block of ``solution_str`` (or all of
it). A case passes when the program ends ``ok`` and its stdout equals the expected one up to
trailing whitespace on each line and trailing blank lines. The score is 1.0 when every case
passes, else 0.0 (``continuous=True``: the fraction passed).

Where the jobs run: ``fleet=`` or ``client=`` when given; otherwise one backend per process,
made on first use: an :class:`agentjail.fleet.Fleet` when this process is connected to Ray
(``ray.is_initialized()``), else an :class:`agentjail.Client`; ``policy=``, ``binary=`` and
``serve_args=`` configure it (the first call's win). A case whose node was lost is run again
(twice at most), then :class:`~agentjail.NodeLost` is raised; a jail that could not be set up
(``sandbox_unavailable``, ``agentjail_error``, ``interrupted``) raises its error: those are
the infrastructure's failures, never the model's score.
"""

from __future__ import annotations

import atexit
import json
import re
import sys
import threading
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

# Absolute imports: verl loads this file by its path, as a module outside the package.
from agentjail._client import Client
from agentjail._record import Record, StopKind

__all__ = ["compute_score", "compute_score_batch", "extract_code", "parse_tests"]

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.S)
_INFRA = (StopKind.SANDBOX_UNAVAILABLE, StopKind.AGENTJAIL_ERROR, StopKind.INTERRUPTED)
LOST_RETRIES = 2

_lock = threading.Lock()
_backend: Any = None


def extract_code(solution_str: str) -> str:
    """The last fenced block (```python first, any fence else), or the whole text."""
    if not isinstance(solution_str, str):
        raise TypeError("solution_str must be a str")
    blocks = _FENCE.findall(solution_str)
    py = [b for lang, b in blocks if lang.lower() in ("python", "py", "python3")]
    if py:
        return py[-1]
    if blocks:
        return blocks[-1][1]
    return solution_str


def parse_tests(ground_truth: Union[str, Mapping[str, Any]]) -> List[Tuple[str, str]]:
    """``[(stdin, expected stdout), ...]`` from ``{"inputs": [...], "outputs": [...]}``."""
    gt = json.loads(ground_truth) if isinstance(ground_truth, (str, bytes)) else ground_truth
    if not isinstance(gt, Mapping):
        raise ValueError("ground_truth must be {\"inputs\": [...], \"outputs\": [...]} (or its JSON)")
    if gt.get("fn_name"):
        raise ValueError("ground_truth with fn_name (call-based cases) is not supported: "
                         "only stdin/stdout cases")
    ins, outs = gt.get("inputs"), gt.get("outputs")
    if not isinstance(ins, list) or not isinstance(outs, list) or len(ins) != len(outs) or not ins:
        raise ValueError("ground_truth needs lists \"inputs\" and \"outputs\" of the same, non-zero length")
    return [(_text(i, "inputs"), _text(o, "outputs")) for i, o in zip(ins, outs)]


def _text(v: Any, what: str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return "\n".join(v) + "\n"
    raise ValueError(f"ground_truth {what}: each case is a string (or a list of lines)")


def _same(got: str, want: str) -> bool:
    def norm(s: str) -> List[str]:
        lines = [ln.rstrip() for ln in s.splitlines()]
        while lines and not lines[-1]:
            lines.pop()
        return lines
    return norm(got) == norm(want)


def _default(policy: Optional[str], binary: Optional[str], serve_args: Sequence[str]) -> Any:
    global _backend
    with _lock:
        if _backend is None:
            ray = sys.modules.get("ray")
            if ray is not None and ray.is_initialized():
                from agentjail.fleet import Fleet
                _backend = Fleet(binary=binary, policy=policy, args=list(serve_args))
            else:
                _backend = Client(binary=binary, policy=policy, args=list(serve_args))
            atexit.register(_close_default)
        return _backend


def _close_default() -> None:
    global _backend
    with _lock:
        b, _backend = _backend, None
    if b is not None:
        b.close()  # Fleet.close is Fleet.shutdown


def _run_all(backend: Any, jobs: List[Dict[str, Any]]) -> List[Record]:
    if hasattr(backend, "map"):
        return backend.map(jobs)
    out = []
    for j in jobs:
        j = dict(j)
        out.append(backend.run(j.pop("code"), **j))
    return out


def _score_many(
    items: List[Tuple[str, List[Tuple[str, str]]]],
    *,
    backend: Any,
    timeout: Optional[float],
    continuous: bool,
) -> List[float]:
    jobs: List[Dict[str, Any]] = []
    where: List[Tuple[int, str]] = []
    for k, (code, cases) in enumerate(items):
        for stdin, want in cases:
            job: Dict[str, Any] = {"code": code, "stdin": stdin, "output_mode": "text"}
            if timeout is not None:
                job["timeout"] = timeout
            jobs.append(job)
            where.append((k, want))
    records = _run_all(backend, jobs)
    for _ in range(LOST_RETRIES):
        again = [i for i, r in enumerate(records) if r.stop.kind is StopKind.NODE_LOST]
        if not again:
            break
        for i, r in zip(again, _run_all(backend, [jobs[i] for i in again])):
            records[i] = r
    passed = [0] * len(items)
    for (k, want), r in zip(where, records):
        if r.stop.kind is StopKind.NODE_LOST or r.stop.kind in _INFRA:
            r.raise_for_status()
        if r.ok and _same(r.stdout, want):
            passed[k] += 1
    scores = []
    for (_, cases), p in zip(items, passed):
        scores.append(p / len(cases) if continuous else float(p == len(cases)))
    return scores


def compute_score(
    data_source: Any,
    solution_str: str,
    ground_truth: Union[str, Mapping[str, Any]],
    extra_info: Optional[Mapping[str, Any]] = None,
    *,
    fleet: Any = None,
    client: Optional[Client] = None,
    policy: Optional[str] = None,
    binary: Optional[str] = None,
    serve_args: Sequence[str] = (),
    timeout: Optional[float] = None,
    continuous: bool = False,
    **kwargs: Any,
) -> float:
    """verl's custom reward function: the score of ``solution_str`` on ``ground_truth``'s
    test cases (``data_source``, ``extra_info`` and other keywords verl passes are unused)."""
    backend = fleet or client or _default(policy, binary, serve_args)
    return _score_many([(extract_code(solution_str), parse_tests(ground_truth))],
                       backend=backend, timeout=timeout, continuous=continuous)[0]


def compute_score_batch(
    data_sources: Sequence[Any],
    solution_strs: Sequence[str],
    ground_truths: Sequence[Union[str, Mapping[str, Any]]],
    extra_infos: Optional[Sequence[Any]] = None,
    *,
    fleet: Any = None,
    client: Optional[Client] = None,
    policy: Optional[str] = None,
    binary: Optional[str] = None,
    serve_args: Sequence[str] = (),
    timeout: Optional[float] = None,
    continuous: bool = False,
    **kwargs: Any,
) -> List[float]:
    """The batch form (verl's batch reward manager): every case of every solution in one
    ``map``; the scores in order."""
    if len(solution_strs) != len(ground_truths):
        raise ValueError("solution_strs and ground_truths differ in length")
    backend = fleet or client or _default(policy, binary, serve_args)
    items = [(extract_code(s), parse_tests(g)) for s, g in zip(solution_strs, ground_truths)]
    return _score_many(items, backend=backend, timeout=timeout, continuous=continuous)

