"""A fleet of jails on a Ray cluster: one ``agentjail serve`` per node, owned by a Ray actor
pinned to that node (``pip install 'agentjail-client[ray]'``).

    import agentjail.fleet
    with agentjail.fleet.Fleet(policy="policies/data.toml") as fleet:
        records = fleet.map([{"code": code, "input": {"n": n}} for n in range(1000)])
        records[0].node                     # the Ray node id that ran it

``Fleet()`` joins the running Ray cluster (``ray.init()`` when the driver has not) and starts
one actor per alive node (hard node affinity, ``num_cpus=0``), each owning its node's
``agentjail serve`` through a :class:`~agentjail.Client`. Jobs go to the least loaded node;
each node takes at most ``concurrency`` jobs at once (the actor's ``max_concurrency`` holds
that many job calls plus a few control calls), and a caller past every node's limit waits.

A node, actor or server that dies: each job it had in flight comes back as a record with
``stop_reason`` ``node_lost:<node id>`` (``fleet.run`` raises it as :class:`NodeLost`; in
``fleet.map`` it is that job's record, never a success), the fleet starts a new actor on the
node while Ray says the node is alive and forgets the node otherwise, new work goes to the
live nodes, and the node's sessions answer ``unknown_session``.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _errors as E
from . import _protocol as P
from ._client import Client, Session
from ._record import Record

try:
    import ray
    from ray.exceptions import ActorUnschedulableError, GetTimeoutError, ObjectLostError, RayActorError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as _e:  # pragma: no cover - the message is the point
    raise ImportError(
        "agentjail.fleet needs Ray: pip install 'agentjail-client[ray]' (the pinned version)"
    ) from _e

__all__ = ["Fleet", "FleetSession", "NodeLost"]

NodeLost = E.NodeLost

# Calls an actor answers besides jobs (info, stats, session start/close, close).
CONTROL_SLOTS = 4
# The keywords of Client.run, and so of fleet.run and of each fleet.map job.
RUN_KEYS = frozenset({
    "code", "input", "stdin", "files", "output_schema", "output_mode", "timeout", "language",
    "entrypoint", "policy_hints", "inputs",
})


# -- the actor: one per node ----------------------------------------------------------------

def _encode_error(e: BaseException) -> Tuple[str, str, str]:
    """An exception of the client, as plain data (they do not all pickle)."""
    if isinstance(e, E.ServerError):
        return ("server", e.code, e.message)
    return ("error", type(e).__name__, str(e)[:4000])


_PLAIN_ERRORS = {
    "ConnectionClosed": E.ConnectionClosed, "ProtocolError": E.ProtocolError,
    "NotSupportedYet": E.AgentjailError, "AgentjailError": E.AgentjailError,
    "TypeError": TypeError, "ValueError": ValueError,
}


def _decode_error(enc: Sequence[str], node: str) -> BaseException:
    kind, name, msg = enc
    if kind == "server":
        if name == "unavailable":
            return P.SessionUnavailable(name, msg)
        return P._SERVER_ERRORS.get(name, E.ServerError)(name, msg)
    cls = _PLAIN_ERRORS.get(name, E.AgentjailError)
    if cls in (TypeError, ValueError):
        return cls(msg)
    return cls(f"node {node}: {msg}")


class _NodeServer:
    """Owns one node's ``agentjail serve`` (a :class:`Client` subprocess). Every method
    answers ``("ok", value)`` or ``("err", encoded error)``."""

    def __init__(self, client_kw: Dict[str, Any]) -> None:
        self.node = ray.get_runtime_context().get_node_id()
        self.client: Optional[Client] = None
        self.error: Optional[Tuple[str, str, str]] = None
        try:
            self.client = Client(**client_kw)
        except Exception as e:  # reported by info(), the first call the fleet makes
            self.error = _encode_error(e)

    def _call(self, fn: Any) -> Tuple[str, Any]:
        if self.client is None:
            return ("err", self.error)
        try:
            return ("ok", fn(self.client))
        except (E.AgentjailError, TypeError, ValueError) as e:
            return ("err", _encode_error(e))

    def info(self) -> Tuple[str, Any]:
        return self._call(lambda c: {"node": self.node, "pid": os.getpid(), "serve_pid": c.pid})

    def run(self, kw: Dict[str, Any]) -> Tuple[str, Any]:
        kw = dict(kw)
        code = kw.pop("code")
        return self._call(lambda c: dataclasses.replace(c.run(code, **kw), node=self.node))

    def stats(self) -> Tuple[str, Any]:
        return self._call(lambda c: c.stats())

    def session_start(self, hints: Optional[Dict[str, Any]]) -> Tuple[str, Any]:
        return self._call(lambda c: c.session(policy_hints=hints).id)

    def session_exec(self, sid: str, code: str, timeout: Optional[float]) -> Tuple[str, Any]:
        return self._call(lambda c: dataclasses.replace(
            Session(c, sid).exec(code, timeout=timeout), node=self.node))

    def session_close(self, sid: str) -> Tuple[str, Any]:
        return self._call(lambda c: Session(c, sid).close())

    def close(self, timeout: float) -> Tuple[str, Any]:
        return self._call(lambda c: c.close(timeout))


_Actor = ray.remote(_NodeServer)


# -- the driver side --------------------------------------------------------------------------

@dataclasses.dataclass
class _Node:
    id: str
    cap: int
    actor: Any = None
    gen: int = 0              # bumped each time the actor is lost: calls of an older one are void
    state: str = "starting"   # "up", "replacing", "gone"
    in_flight: int = 0
    jobs: int = 0             # answered (any record but node_lost)
    lost: int = 0             # jobs answered node_lost
    restarts: int = 0
    info: Dict[str, Any] = dataclasses.field(default_factory=dict)
    why: str = ""


def _lost_record(node: str, why: str) -> Record:
    raw = {"status": "stopped", "stop_reason": f"node_lost:{node}", "phase": "execute",
           "error": {"type": "NodeLost", "message": why[:2000]}}
    return dataclasses.replace(Record.from_dict(raw), node=node)


def _check_job(kw: Any, where: str) -> Dict[str, Any]:
    if not isinstance(kw, Mapping):
        raise TypeError(f"{where}: a job is a dict of Client.run's keywords (code=..., ...)")
    bad = sorted(set(kw) - RUN_KEYS)
    if bad:
        raise TypeError(f"{where}: unknown keyword(s) {bad}; a job takes Client.run's: {sorted(RUN_KEYS)}")
    if "code" not in kw:
        raise TypeError(f"{where}: a job needs code")
    kw = dict(kw)
    # The action's own checks, here, before anything runs anywhere.
    P.build_action(**{k: v for k, v in kw.items() if k != "inputs"})
    if kw.get("inputs") is not None:
        kw["inputs"] = [os.fspath(p) for p in kw["inputs"]]
    return kw


class Fleet:
    """One ``agentjail serve`` per Ray node.

    ``binary``, ``policy``, ``args`` and ``env`` are :class:`~agentjail.Client`'s, applied on
    every node (``binary=None``: each node's ``$AGENTJAIL_BINARY`` or PATH). ``concurrency``
    is how many jobs one node runs at once (default twice the node's Ray CPU count, at
    least 2); ``nodes`` a list of Ray node ids to use (default every alive node).
    """

    def __init__(
        self,
        *,
        binary: Optional[str] = None,
        policy: Optional[Union[str, "os.PathLike[str]"]] = None,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        concurrency: Optional[int] = None,
        nodes: Optional[Sequence[str]] = None,
        start_timeout: float = 120.0,
        close_timeout: float = 30.0,
    ) -> None:
        if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)
                                        or concurrency < 1):
            raise ValueError("concurrency must be a positive int (jobs at once per node)")
        if any(not isinstance(a, str) for a in args):
            raise TypeError("args must be strings")
        if not ray.is_initialized():
            ray.init()
        self._client_kw: Dict[str, Any] = {
            "binary": binary, "policy": None if policy is None else os.fspath(policy),
            "args": list(args), "env": None if env is None else dict(env),
            "close_timeout": close_timeout,
        }
        self._start_timeout = start_timeout
        self._close_timeout = close_timeout
        self._cond = threading.Condition()
        self._closed = False
        self._threads: List[threading.Thread] = []
        alive = {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}
        if nodes is not None:
            missing = [n for n in nodes if n not in alive]
            if missing:
                raise E.AgentjailError(f"no alive Ray node with id {missing}")
            alive = {n: alive[n] for n in nodes}
        if not alive:
            raise E.AgentjailError("the Ray cluster has no alive node")
        self._nodes: Dict[str, _Node] = {}
        for nid, n in alive.items():
            cap = concurrency or max(2, 2 * int(n.get("Resources", {}).get("CPU", 1)))
            self._nodes[nid] = _Node(id=nid, cap=cap)
        failed: List[Tuple[str, BaseException]] = []
        refs = {}
        for nid, node in self._nodes.items():
            try:
                node.actor, refs[nid] = self._start_actor(node)
            except BaseException as e:  # noqa: BLE001 - every start failure is reported
                failed.append((nid, e))
        for nid, ref in refs.items():
            node = self._nodes[nid]
            try:
                node.info = self._await_info(ref, nid, start_timeout)
                node.state = "up"
            except BaseException as e:  # noqa: BLE001 - every start failure is reported
                failed.append((nid, e))
        if failed:
            self.shutdown()
            nid, e = failed[0]
            if isinstance(e, E.AgentjailError):
                raise e
            raise E.AgentjailError(f"node {nid}: the fleet's actor did not start: {e}") from e

    # -- starting and replacing actors -----------------------------------------------------
    def _start_actor(self, node: _Node) -> Tuple[Any, Any]:
        actor = _Actor.options(
            num_cpus=0,
            max_concurrency=node.cap + CONTROL_SLOTS,
            max_restarts=0,
            max_task_retries=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node.id, soft=False),
        ).remote(self._client_kw)
        return actor, actor.info.remote()

    @staticmethod
    def _await_info(ref: Any, nid: str, timeout: float) -> Dict[str, Any]:
        try:
            tag, val = ray.get(ref, timeout=timeout)
        except GetTimeoutError:
            raise E.AgentjailError(f"node {nid}: the fleet's actor did not start in {timeout} s") from None
        if tag != "ok":
            raise _decode_error(val, nid)
        return val

    def _lose(self, node: _Node, gen: int, why: str) -> None:
        """The actor of ``node`` (generation ``gen``) is gone: replace it in the background."""
        with self._cond:
            if node.gen != gen or node.state != "up":
                return
            node.gen += 1
            node.state = "replacing"
            node.in_flight = 0
            node.why = why
            old, node.actor = node.actor, None
            if self._closed:
                node.state = "gone"
                self._cond.notify_all()
                return
            t = threading.Thread(target=self._replace, args=(node, old, node.gen),
                                 name="agentjail-fleet-replace", daemon=True)
            self._threads.append(t)
            self._cond.notify_all()
        t.start()

    def _node_alive(self, nid: str) -> bool:
        try:
            return any(n["NodeID"] == nid and n.get("Alive") for n in ray.nodes())
        except Exception:  # noqa: BLE001 - the GCS itself is unreachable: treat as gone
            return False

    def _replace(self, node: _Node, old: Any, gen: int) -> None:
        try:
            ray.kill(old)  # a half-dead actor (its server gone) must not linger
        except Exception:  # noqa: BLE001 - already dead
            pass
        deadline = time.monotonic() + self._start_timeout
        actor = None
        while not self._closed and time.monotonic() < deadline and self._node_alive(node.id):
            actor, ref = self._start_actor(node)
            try:
                info = self._await_info(ref, node.id, max(1.0, deadline - time.monotonic()))
            except Exception as e:  # noqa: BLE001 - the node may be dying: look again
                node.why = f"{node.why}; replacing the actor failed: {e}"
                try:
                    ray.kill(actor)
                except Exception:  # noqa: BLE001
                    pass
                actor = None
                time.sleep(0.5)
                continue
            break
        with self._cond:
            if actor is not None and not self._closed and node.gen == gen:
                node.actor, node.info, node.state = actor, info, "up"
                node.restarts += 1
                actor = None
            else:
                node.state = "gone"
            self._cond.notify_all()
        if actor is not None:  # closed meanwhile
            self._end_actor(actor)

    def _end_actor(self, actor: Any) -> None:
        try:
            ray.get(actor.close.remote(self._close_timeout), timeout=self._close_timeout + 30)
        except Exception:  # noqa: BLE001 - dead already, or stuck: killed below
            pass
        try:
            ray.kill(actor)
        except Exception:  # noqa: BLE001
            pass

    # -- slots: least loaded, at most `cap` jobs per node --------------------------------
    def _pick(self, pinned: Optional[_Node] = None, *, capped: bool = True) -> Optional[Tuple[_Node, int, Any]]:
        if self._closed:
            raise E.ConnectionClosed("the fleet is shut down")
        cands = [pinned] if pinned is not None else list(self._nodes.values())
        best = None
        for n in cands:
            if n.state != "up" or (capped and n.in_flight >= n.cap):
                continue
            key = (n.in_flight / n.cap, n.jobs)
            if best is None or key < best[0]:
                best = (key, n)
        if best is None:
            return None
        n = best[1]
        n.in_flight += 1
        return n, n.gen, n.actor

    def _live(self) -> bool:
        return any(n.state in ("up", "replacing") for n in self._nodes.values())

    def _acquire(self, *, capped: bool = True) -> Tuple[_Node, int, Any]:
        with self._cond:
            while True:
                got = self._pick(capped=capped)
                if got is not None:
                    return got
                if not self._live():
                    raise self._no_node()
                self._cond.wait(1.0)

    def _no_node(self) -> E.NodeLost:
        why = "; ".join(f"{n.id}: {n.why}" for n in self._nodes.values() if n.why) or "none left"
        return E.NodeLost(_lost_record("none", f"no live node in the fleet ({why})"))

    def _release(self, node: _Node, gen: int, answered: bool) -> None:
        with self._cond:
            if node.gen == gen:
                node.in_flight -= 1
                if answered:
                    node.jobs += 1
            self._cond.notify_all()

    def _finish(self, ref: Any, node: _Node, gen: int) -> Tuple[str, Any]:
        """Wait for a call; ("ok", value) | ("err", exception) | ("lost", record)."""
        try:
            tag, val = ray.get(ref)
        except (RayActorError, ActorUnschedulableError, ObjectLostError) as e:
            # The actor died (with its node or alone), or the record it answered was in the
            # object store of a node that is gone.
            self._release(node, gen, False)
            return self._lost(node, gen, f"the node's actor or its answer is gone: {str(e)[:1500]}")
        except BaseException:
            self._release(node, gen, False)
            raise
        if tag == "ok":
            self._release(node, gen, True)
            return ("ok", val)
        err = _decode_error(val, node.id)
        if isinstance(err, E.ConnectionClosed):  # the node's serve went away under the actor
            self._release(node, gen, False)
            return self._lost(node, gen, str(err))
        self._release(node, gen, True)
        return ("err", err)

    def _lost(self, node: _Node, gen: int, why: str) -> Tuple[str, Any]:
        with self._cond:
            node.lost += 1
        self._lose(node, gen, why)
        return ("lost", _lost_record(node.id, why))

    # -- the API -----------------------------------------------------------------------------
    def run(self, code: str, **kw: Any) -> Record:
        """:meth:`Client.run <agentjail.Client.run>` on the least loaded node; ``record.node``
        says which. A node lost before it answered raises :class:`NodeLost`."""
        job = _check_job(dict(kw, code=code), "run")
        node, gen, actor = self._acquire()
        tag, val = self._finish(actor.run.remote(job), node, gen)
        if tag == "ok":
            return val
        if tag == "lost":
            raise E.NodeLost(val)
        raise val

    def map(self, jobs: Sequence[Mapping[str, Any]]) -> List[Record]:
        """Run every job (a dict of :meth:`run`'s keywords, ``code`` included), spread over the
        nodes, least loaded first, at most ``concurrency`` per node at once. The records come
        back in the jobs' order; a job whose node was lost is a ``node_lost:<node>`` record.
        Every job is checked before any runs (``TypeError``/``ValueError``)."""
        todo = [_check_job(j, f"jobs[{i}]") for i, j in enumerate(jobs)]
        out: List[Any] = [None] * len(todo)  # a Record, or the error a job got instead
        pending = collections.deque(range(len(todo)))
        flying: Dict[Any, Tuple[int, _Node, int]] = {}
        first_error: Optional[BaseException] = None
        try:
            self._map_loop(todo, out, pending, flying)
        except BaseException:
            for _, node, gen in flying.values():  # abandoned: their slots are free again
                self._release(node, gen, False)
            raise
        for r in out:
            if isinstance(r, BaseException):
                first_error = first_error or r
        if first_error is not None:
            raise first_error
        return [r for r in out if r is not None]

    def _map_loop(self, todo: List[Dict[str, Any]], out: List[Any], pending: Any,
                  flying: Dict[Any, Tuple[int, "_Node", int]]) -> None:
        while pending or flying:
            with self._cond:
                while pending:
                    got = self._pick()
                    if got is None:
                        break
                    node, gen, actor = got
                    i = pending.popleft()
                    flying[actor.run.remote(todo[i])] = (i, node, gen)
                if not flying and pending:
                    if not self._live():
                        lost = self._no_node().record
                        for i in pending:
                            out[i] = lost
                        pending.clear()
                        break
                    self._cond.wait(1.0)  # every slot is someone else's: wait for one
                    continue
            done, _ = ray.wait(list(flying), num_returns=1)
            for ref in done:
                i, node, gen = flying.pop(ref)
                # An "err" is an answer that is not a record (a protocol error): raised once
                # every other job has its answer.
                out[i] = self._finish(ref, node, gen)[1]

    def session(self, *, policy_hints: Optional[Mapping[str, Any]] = None) -> "FleetSession":
        """A session on the least loaded node, pinned there (``session.node``)."""
        node, gen, actor = self._acquire(capped=False)
        tag, val = self._finish(actor.session_start.remote(None if policy_hints is None else dict(policy_hints)),
                                node, gen)
        if tag == "lost":
            raise E.NodeLost(val)
        if tag == "err":
            raise val
        return FleetSession(self, node, gen, val)

    def stats(self) -> Dict[str, Any]:
        """``{"nodes": {NODE_ID: {"jobs", "in_flight", "lost", "restarts", "state",
        "concurrency", "serve_pid", "serve"}}}``; ``serve`` is that server's own stats (None
        while its actor is down)."""
        with self._cond:
            snap = [(n, n.actor if n.state == "up" else None) for n in self._nodes.values()]
        refs = {n.id: (a.stats.remote() if a is not None else None) for n, a in snap}
        nodes: Dict[str, Any] = {}
        for n, _ in snap:
            serve = None
            if refs[n.id] is not None:
                try:
                    tag, val = ray.get(refs[n.id], timeout=30)
                    serve = val if tag == "ok" else None
                except Exception:  # noqa: BLE001 - the node is going; its counters still tell
                    serve = None
            nodes[n.id] = {
                "jobs": n.jobs, "in_flight": n.in_flight, "lost": n.lost, "restarts": n.restarts,
                "state": n.state, "concurrency": n.cap, "serve_pid": n.info.get("serve_pid"),
                "serve": serve,
            }
        return {"nodes": nodes}

    def shutdown(self) -> None:
        """End every node's server (running jobs finish, up to ``close_timeout``) and its
        actor. Idempotent; the fleet takes no more work."""
        with self._cond:
            if self._closed and not self._threads:
                return
            self._closed = True
            actors = [n.actor for n in self._nodes.values() if n.actor is not None]
            threads, self._threads = self._threads, []
            for n in self._nodes.values():
                n.actor = None
                n.state = "gone"
                n.gen += 1
            self._cond.notify_all()
        refs = []
        for a in actors:
            try:
                refs.append(a.close.remote(self._close_timeout))
            except Exception:  # noqa: BLE001
                pass
        try:
            ray.wait(refs, num_returns=len(refs), timeout=self._close_timeout + 30)
        except Exception:  # noqa: BLE001
            pass
        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        for t in threads:
            t.join(self._start_timeout + self._close_timeout + 60)

    close = shutdown

    def __enter__(self) -> "Fleet":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()


class FleetSession:
    """A session on one node of a :class:`Fleet` (``with fleet.session() as s: s.exec(code)``).
    When the node's server is lost, every call answers :class:`~agentjail.UnknownSession`."""

    def __init__(self, fleet: Fleet, node: _Node, gen: int, session_id: str) -> None:
        self._fleet = fleet
        self._node = node
        self._gen = gen
        self.id = session_id
        self.node = node.id
        self.closed = False

    def _actor(self) -> Any:
        with self._fleet._cond:
            n = self._node
            if n.gen != self._gen or n.state != "up" or self._fleet._closed:
                raise E.UnknownSession(
                    "unknown_session",
                    f"session {self.id} was on node {n.id}, whose server was lost or shut down; start a new one")
            n.in_flight += 1
            return n.actor

    def exec(self, code: str, *, timeout: Optional[float] = None) -> Record:
        """:meth:`Session.exec <agentjail.Session.exec>` on the session's node."""
        if not isinstance(code, str):
            raise TypeError("code must be a str")
        t = P._positive(timeout, "timeout") if timeout is not None else None
        actor = self._actor()
        tag, val = self._fleet._finish(actor.session_exec.remote(self.id, code, t), self._node, self._gen)
        if tag == "ok":
            return val
        if tag == "lost":
            raise E.NodeLost(val)
        raise val

    def close(self) -> bool:
        """End the session. True if its server closed it now."""
        if self.closed:
            return False
        self.closed = True
        try:
            actor = self._actor()
        except E.UnknownSession:
            return False
        tag, val = self._fleet._finish(actor.session_close.remote(self.id), self._node, self._gen)
        return tag == "ok" and val is True

    def __enter__(self) -> "FleetSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
