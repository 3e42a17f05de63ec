#!/usr/bin/env python3
"""Generates contrib/containers/seccomp.json: a container runtime's default seccomp profile
plus exactly the syscalls agentjail needs to build its jail, each addition commented.

    scripts/gen-container-seccomp.py            regenerate contrib/containers/seccomp.json
    scripts/gen-container-seccomp.py --check    exit 1 when the committed file is stale
    scripts/gen-container-seccomp.py --without NAME[,NAME]  write the profile minus those
                                                additions to stdout (scripts/test-container.sh
                                                uses it to prove each addition is needed)
    --deb FILE.deb                              take the base from this downloaded package

The base is Docker's default profile (moby profiles/seccomp/default.json) as Debian ships it
in the package golang-github-docker-docker-dev; containerd's built-in default (Kubernetes'
RuntimeDefault) is the same list. It is taken from the installed package when present,
otherwise from the .deb fetched with `apt-get download` and unpacked with `dpkg-deb -x`
(no install: the package drags in ~260 Go source packages). The output records the package
version and the sha256 of the base file, and --check fails when either changed.

The output keeps Docker's format (names, includes/excludes by capability and architecture),
which Docker, Podman, containerd's and CRI-O's Localhost profiles all read.
"""
import argparse
import copy
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

PACKAGE = "golang-github-docker-docker-dev"
BASE_IN_PACKAGE = "usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "contrib", "containers", "seccomp.json")

# What agentjail adds to the default profile. Each entry is one rule of the output; the base
# profile's own rules for these names are removed, so each name is answered by one rule.
# scripts/test-container.sh removes each in turn and checks the jail then fails to start:
# nothing here is unneeded.
ADDITIONS = [
    {
        "names": ["clone3"],
        "comment": "agentjail starts the jail with one clone3 into new user, mount, pid, net, "
        "ipc and uts namespaces (with CLONE_PIDFD). The default answers clone3 with ENOSYS "
        "without CAP_SYS_ADMIN, and clone with any CLONE_NEW* flag with EPERM; agentjail "
        "has no fallback to clone and needs none: plain clone/fork stays as the default has it.",
    },
    {
        "names": ["unshare"],
        "comment": "The jail's child unshares its cgroup namespace once it is in its cgroup, "
        "and `agentjail doctor` probes each namespace with unshare. The default allows "
        "unshare only with CAP_SYS_ADMIN. agentjail needs no capability of the container: "
        "its new user namespace gives it its own, over its own namespaces only.",
    },
    {
        "names": ["mount", "umount2"],
        "comment": "Inside its own user and mount namespace the jail makes / private, mounts "
        "a tmpfs root, read-only binds, a fresh /proc and /dev, and detaches the old root "
        "(umount2 MNT_DETACH). The default allows them only with CAP_SYS_ADMIN. The mounts "
        "inherited from the container stay locked in the new user namespace: the kernel "
        "refuses to unmount them or clear their read-only, nosuid, nodev flags.",
    },
    {
        "names": ["pivot_root"],
        "comment": "The jail pivots into its tmpfs root so that no path of the container "
        "outside its binds is reachable. The default profile refuses it to everyone.",
    },
    {
        "names": ["sethostname"],
        "comment": "The jail names its own new UTS namespace (the container's hostname is "
        "untouched). The default allows it only with CAP_SYS_ADMIN.",
    },
    {
        "names": ["mount_setattr"],
        "optional": True,
        "comment": "The jail makes each recursive read-only bind read-only, nosuid and nodev "
        "all the way down with one atomic mount_setattr(AT_RECURSIVE), setting flags only. "
        "The default allows it only with CAP_SYS_ADMIN; without it agentjail remounts each "
        "submount one by one instead (the same result, not atomic), so this rule is the "
        "better path, not a requirement.",
    },
    {
        "names": ["pidfd_getfd"],
        "comment": "The supervisor takes the jail's seccomp user-notification listener from "
        "the jailed program through its pidfd. The default allows it only with "
        "CAP_SYS_PTRACE; the kernel still requires ptrace access to the target, which is "
        "the supervisor's own descendant in a user namespace the supervisor owns.",
    },
]


def base_from_deb(deb):
    with tempfile.TemporaryDirectory(prefix="agentjail-seccomp-") as td:
        ver = subprocess.run(["dpkg-deb", "-f", deb, "Version"], capture_output=True, text=True, check=True).stdout.strip()
        subprocess.run(["dpkg-deb", "-x", deb, td], check=True)
        with open(os.path.join(td, BASE_IN_PACKAGE), "rb") as f:
            return f.read(), ver


def base_from_package():
    installed = "/" + BASE_IN_PACKAGE
    if os.path.isfile(installed):
        ver = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", PACKAGE], capture_output=True, text=True, check=True
        ).stdout
        with open(installed, "rb") as f:
            return f.read(), ver
    with tempfile.TemporaryDirectory(prefix="agentjail-seccomp-") as td:
        os.chmod(td, 0o755)  # apt's sandbox user writes the .deb here
        r = subprocess.run(["apt-get", "download", PACKAGE], cwd=td, capture_output=True, text=True)
        debs = glob.glob(os.path.join(td, "*.deb"))
        if r.returncode != 0 or not debs:
            sys.exit(f"gen-container-seccomp: apt-get download {PACKAGE} failed: {r.stderr.strip()}")
        return base_from_deb(debs[0])


def generate(raw, version, without=()):
    base = json.loads(raw)
    # The names agentjail answers itself; --without leaves those to the base's own rules.
    added = {n for a in ADDITIONS for n in a["names"]} - set(without)
    out = copy.deepcopy(base)
    rules = []
    for rule in out["syscalls"]:
        names = [n for n in rule["names"] if n not in added]
        if names:
            rule["names"] = names
            rules.append(rule)
    for a in ADDITIONS:
        names = [n for n in a["names"] if n not in without]
        if names:
            rules.append({"names": names, "action": "SCMP_ACT_ALLOW", "comment": "agentjail: " + a["comment"]})
    out["syscalls"] = rules
    # Provenance first in the file: a reader sees what this is before the 300 names.
    head = {
        "comment": "Generated by scripts/gen-container-seccomp.py: Docker's default seccomp profile "
        f"(Debian {PACKAGE} {version}, {BASE_IN_PACKAGE}, sha256 "
        f"{hashlib.sha256(raw).hexdigest()}) plus the rules commented 'agentjail:'. "
        "Do not edit; regenerate.",
    }
    head.update(out)
    return json.dumps(head, indent=2) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--without", default="")
    ap.add_argument("--base", help="a default.json to use instead of the Debian package's")
    ap.add_argument("--deb", help=f"an already downloaded {PACKAGE} .deb to take the base from")
    args = ap.parse_args()
    if args.base:
        with open(args.base, "rb") as f:
            raw, version = f.read(), "(local file)"
    elif args.deb:
        raw, version = base_from_deb(args.deb)
    else:
        raw, version = base_from_package()
    if args.without:
        without = set(args.without.split(","))
        unknown = without - {n for a in ADDITIONS for n in a["names"]}
        if unknown:
            sys.exit(f"gen-container-seccomp: not an addition: {sorted(unknown)}")
        sys.stdout.write(generate(raw, version, without))
        return
    text = generate(raw, version)
    if args.check:
        try:
            with open(OUT) as f:
                current = f.read()
        except FileNotFoundError:
            current = ""
        if current != text:
            sys.exit(f"gen-container-seccomp: {os.path.relpath(OUT)} is stale: run scripts/gen-container-seccomp.py")
        print(f"ok   - {os.path.relpath(OUT)} is what the generator makes")
        return
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        f.write(text)
    print(f"wrote {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
