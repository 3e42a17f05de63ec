#!/usr/bin/env python3
"""Writes an OCI runtime config (config.json) for scripts/test-container.sh: a container as
Docker makes one by default, with the settings agentjail's container guide changes.

    container-bundle.py --rootfs DIR --out FILE [--seccomp PROFILE.json|unconfined]
        [--proc masked|unmasked] [--user UID:GID] [--caps docker|none] [--no-new-privs]
        [--bind SRC:DST[:rw]]... [--env K=V]... [--cwd DIR] [--cgroups-path P]
        [--readonly-root] [--userns] -- ARGS...

--seccomp takes a profile in Docker's format (contrib/containers/seccomp.json, Docker's
default.json) and compiles it the way Docker does for this container: a rule is kept when
the container's capability set holds every capability in its `includes.caps` and none in
its `excludes.caps`, and its architectures match amd64. runc reads only the compiled form.

--proc masked is Docker's default (the paths below masked or read-only; also runc's and
containerd's); unmasked is `--security-opt systempaths=unconfined` / `procMount: Unmasked`.

--userns runs the container in its own user namespace (container uid 0-65535 = host uid
100000-165535), as Kubernetes does for a pod with `hostUsers: false`.
"""
import argparse
import json
import platform
import sys

# Docker's defaults (moby oci/defaults.go), which containerd and Kubernetes also use.
MASKED = [
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
]
READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
DOCKER_CAPS = [
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FSETID",
    "CAP_FOWNER",
    "CAP_MKNOD",
    "CAP_NET_RAW",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
    "CAP_SETPCAP",
    "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT",
    "CAP_KILL",
    "CAP_AUDIT_WRITE",
]
ARCH = "amd64"


def kernel_at_least(want):
    have = [int(x) for x in platform.release().split("-")[0].split(".")[:2]]
    need = [int(x) for x in want.split(".")[:2]]
    return have >= need


def compile_seccomp(profile, caps):
    """Docker's format → the OCI `linux.seccomp` object for an amd64 container with `caps`."""
    out = {"defaultAction": profile["defaultAction"], "syscalls": []}
    if "defaultErrnoRet" in profile:
        out["defaultErrnoRet"] = profile["defaultErrnoRet"]
    for m in profile.get("archMap", []):
        if m["architecture"] == "SCMP_ARCH_X86_64":
            out["architectures"] = [m["architecture"]] + m.get("subArchitectures", [])
    for rule in profile["syscalls"]:
        inc = rule.get("includes") or {}
        exc = rule.get("excludes") or {}
        if ARCH in exc.get("arches", []) or any(c in caps for c in exc.get("caps", [])):
            continue
        if inc.get("arches") and ARCH not in inc["arches"]:
            continue
        if not all(c in caps for c in inc.get("caps", [])):
            continue
        if inc.get("minKernel") and not kernel_at_least(inc["minKernel"]):
            continue
        r = {"names": rule["names"], "action": rule["action"]}
        if rule.get("errnoRet") is not None:
            r["errnoRet"] = rule["errnoRet"]
        if rule.get("args"):
            r["args"] = [
                {"index": a["index"], "value": a["value"], "valueTwo": a.get("valueTwo", 0), "op": a["op"]}
                for a in rule["args"]
            ]
        out["syscalls"].append(r)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rootfs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seccomp", default="unconfined")
    ap.add_argument("--proc", choices=["masked", "unmasked"], default="masked")
    ap.add_argument("--user", default="0:0")
    ap.add_argument("--caps", choices=["docker", "none"], default="docker")
    ap.add_argument("--no-new-privs", action="store_true")
    ap.add_argument("--bind", action="append", default=[])
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--cwd", default="/")
    ap.add_argument("--cgroups-path")
    ap.add_argument("--readonly-root", action="store_true")
    ap.add_argument("--userns", action="store_true")
    ap.add_argument("args", nargs="+")
    a = ap.parse_args()

    uid, gid = (int(x) for x in a.user.split(":"))
    caps = DOCKER_CAPS if a.caps == "docker" else []
    # As Docker: a non-root process keeps the bounding set but no effective capabilities.
    live = caps if uid == 0 else []
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777", "size=2g"]},
    ]
    for b in a.bind:
        parts = b.split(":")
        rw = len(parts) == 3 and parts[2] == "rw"
        mounts.append(
            {"destination": parts[1], "type": "bind", "source": parts[0], "options": ["rbind", "nosuid", "nodev", "rw" if rw else "ro"]}
        )
    linux = {
        "namespaces": [{"type": t} for t in ["pid", "network", "ipc", "uts", "mount"]],
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
        "maskedPaths": MASKED if a.proc == "masked" else [],
        "readonlyPaths": READONLY if a.proc == "masked" else [],
    }
    if a.userns:
        linux["namespaces"].append({"type": "user"})
        linux["uidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
        linux["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
    if a.cgroups_path:
        linux["cgroupsPath"] = a.cgroups_path
    if a.seccomp != "unconfined":
        with open(a.seccomp) as f:
            linux["seccomp"] = compile_seccomp(json.load(f), caps)
    config = {
        "ociVersion": "1.0.2-dev",
        "process": {
            "terminal": False,
            "user": {"uid": uid, "gid": gid},
            "args": a.args,
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root" if uid == 0 else "HOME=/tmp"]
            + a.env,
            "cwd": a.cwd,
            "capabilities": {"bounding": caps, "effective": live, "permitted": live, "inheritable": [], "ambient": []},
            "noNewPrivileges": a.no_new_privs,
        },
        "root": {"path": a.rootfs, "readonly": a.readonly_root},
        "hostname": "agentjail-ctr",
        "mounts": mounts,
        "linux": linux,
    }
    with open(a.out, "w") as f:
        json.dump(config, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
