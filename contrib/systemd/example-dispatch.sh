#!/usr/bin/env bash
# How a service hands one job to agentjail-job@.service and gets the record back.
#
#   example-dispatch.sh ACTION.json            prints the record; exit 0 ok, 1 stopped, 2 error
#
# Runs as root (or a user with polkit rights to start the unit): with DynamicUser=yes the
# state directory is /var/lib/private/agentjail (0700 root), reached through the
# /var/lib/agentjail symlink systemd makes on first start.
set -euo pipefail
action=${1:?usage: example-dispatch.sh ACTION.json}
state=/var/lib/agentjail

# A job id the unit can use verbatim: [A-Za-z0-9_-] only, so %i needs no escaping and is
# safe in the unit's shell line. Never derive it from the agent's input.
id=job-$(date +%Y%m%dT%H%M%S)-$$-$RANDOM

# Before the first start the state directory does not exist yet; creating it once as root is
# enough — systemd moves it under /var/lib/private and hands it to the dynamic user.
[ -d "$state/spool" ] || install -d -m 0700 "$state" "$state/spool" "$state/records"

# Drop the action into the spool: write to a temp name, then rename, so the unit never reads
# a half-written file.
install -m 0644 "$action" "$state/spool/.$id.json.tmp"
mv "$state/spool/.$id.json.tmp" "$state/spool/$id.json"

# Type=oneshot: `systemctl start` returns when the job is finished. A unit failure means
# agentjail itself could not work (exit 2); "stopped" runs (exit 1) are normal results.
if ! systemctl start "agentjail-job@$id.service"; then
    echo "dispatch: agentjail-job@$id failed; see: journalctl -u agentjail-job@$id" >&2
    rm -f "$state/spool/$id.json"
    exit 2
fi

record=$state/records/$id.json
cat "$record"
status=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$record")

# The spool file is done with; keep the record (and the audit log) for the reviewers.
rm -f "$state/spool/$id.json"
[ "$status" = ok ]
