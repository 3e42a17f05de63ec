# The GPU-node / pod mount layout, built in the current mount namespace, which must be a
# private one (unshare --mount --propagation private): nothing here reaches the host's.
#   - a writable tmpfs on /usr/local, with a read-only one on /usr/local/nvidia beneath it
#     (NVIDIA's container toolkit mounts the driver so);
#   - a suid- and device-capable tmpfs on /usr/lib/x86_64-linux-gnu/audit;
#   - a writable bind over /usr/share/doc.
# All world-writable, so that only mount flags can refuse a write from a jail. Sourced by
# tests/host_layouts.rs and scripts/test-layouts.sh.
set -e
mount -t tmpfs -o mode=0777 aj-usr-local /usr/local
mkdir -p /usr/local/nvidia /usr/local/bin
chmod 0777 /usr/local/bin
echo local > /usr/local/bin/probe
chmod 0666 /usr/local/bin/probe
mount -t tmpfs -o mode=0777 aj-nvidia /usr/local/nvidia
echo driver > /usr/local/nvidia/libfake.so
mount -o remount,ro /usr/local/nvidia
mount -t tmpfs -o mode=0777,suid,dev aj-lib /usr/lib/x86_64-linux-gnu/audit
cp /usr/bin/true /usr/lib/x86_64-linux-gnu/audit/suid-true
chmod 4755 /usr/lib/x86_64-linux-gnu/audit/suid-true
mknod /usr/lib/x86_64-linux-gnu/audit/null c 1 3
chmod 666 /usr/lib/x86_64-linux-gnu/audit/null
mount --bind /usr/local/bin /usr/share/doc
set +e
