"""What a policy allows, as the binary loaded it (``agentjail policy show --json``), and the
sentence a tool description makes of it: the imports the static check accepts, the limits,
the network. The adapters (LangChain, smolagents) describe their tool with it, so a model
knows before it writes code which imports pass."""

from __future__ import annotations

import json
import subprocess
from typing import Any, Dict, List, Mapping, Optional

from . import _errors as E


class PolicyInfo:
    """The effective policy a binary loads for ``policy`` (a path or a shipped name)."""

    def __init__(self, shown: Mapping[str, Any]) -> None:
        self.raw: Dict[str, Any] = dict(shown.get("policy") or {})
        self.python_version: str = str(shown.get("python_version") or "")
        self.source: str = str(shown.get("source") or "")

    def _section(self, key: str) -> Dict[str, Any]:
        v = self.raw.get(key)
        return v if isinstance(v, dict) else {}

    @property
    def name(self) -> str:
        return str(self.raw.get("name") or "")

    @property
    def allowed_imports(self) -> List[str]:
        """The modules the static check lets a program import (``check.allowed_imports``)."""
        return [str(m) for m in self._section("check").get("allowed_imports") or []]

    @property
    def open_allowed(self) -> bool:
        return "open" not in (self._section("check").get("denied_calls") or [])

    @property
    def network(self) -> str:
        """``"none"``, ``"allowlist"`` or ``"host"``."""
        n = self._section("network")
        if n.get("mode") == "allowlist":
            return "allowlist"
        return "host" if n.get("enabled") else "none"

    @property
    def allowed_hosts(self) -> List[str]:
        return [str(h) for h in self._section("network").get("allow") or []]

    def describe(self) -> str:
        """One paragraph for a tool description: imports, limits, network, files."""
        lim = self._section("limits")
        wall = lim.get("wall_time_ms")
        wall_s = f"{wall / 1000:g} s" if isinstance(wall, (int, float)) else "the policy's"
        imports = ", ".join(self.allowed_imports) or "none"
        parts = [
            f'Policy "{self.name}" (Python {self.python_version}).',
            f"Imports allowed: {imports}; any other import is refused before the code runs.",
            f"Limits per run: wall {wall_s}, memory {lim.get('memory', '?')}, "
            f"stdout {lim.get('stdout', '?')}.",
        ]
        if self.network == "allowlist":
            n = self._section("network")
            scheme = "http:// and https://" if n.get("allow_http") else "https:// only"
            parts.append(
                f"Network: only {', '.join(self.allowed_hosts) or 'no host'} ({scheme}), through "
                "agentjail's proxy (urllib.request and requests use it by themselves); other "
                "hosts are refused with HTTP 403."
            )
        elif self.network == "host":
            parts.append("Network: the host's.")
        else:
            parts.append("No network.")
        parts.append("open() works inside the jail (only /tmp is writable)." if self.open_allowed
                     else "open() is refused: no file access.")
        return " ".join(parts)


def policy_info(binary: str, policy: str, env: Optional[Mapping[str, str]] = None) -> PolicyInfo:
    """``agentjail policy show --json POLICY`` (the loader ``serve`` runs, in the same
    working directory and environment): :class:`PolicyError` with the binary's message when
    the policy does not load, :class:`AgentjailError` when the binary cannot run."""
    try:
        p = subprocess.run([binary, "policy", "show", "--json", policy], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=None if env is None else dict(env), timeout=60, close_fds=True)
    except OSError as e:
        raise E.AgentjailError(f"cannot start {binary!r}: {e}") from None
    except subprocess.TimeoutExpired:
        raise E.AgentjailError(f"{binary!r} policy show {policy!r} did not finish in 60 s") from None
    if p.returncode != 0:
        msg = p.stderr.decode("utf-8", "replace").strip()[-4000:]
        if msg.startswith("agentjail: "):
            msg = msg[len("agentjail: "):]
        raise E.PolicyError(msg or f"{binary!r} policy show {policy!r} exited {p.returncode}")
    try:
        shown = json.loads(p.stdout)
    except ValueError:
        raise E.AgentjailError(f"{binary!r} policy show --json {policy!r} printed no JSON") from None
    if not isinstance(shown, dict):
        raise E.AgentjailError(f"{binary!r} policy show --json {policy!r} printed no JSON object")
    return PolicyInfo(shown)
