"""A/B of two agentjail builds, interleaved in one run: `exec -- /bin/true` and `run` of the
seed incident job on the embedded default policy, alternating which binary goes first.

    /usr/bin/python3 scripts/bench/ab.py BEFORE_BINARY AFTER_BINARY [ROUNDS]

Used for "no regression" claims: build the old commit in a worktree (cargo build --release
with its own CARGO_TARGET_DIR), then run this against the current release binary.
"""
import os, subprocess, time, statistics, sys
A, B = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
act = open(os.path.join(root, 'examples/incident/action.json'), 'rb').read()
N = int(sys.argv[3]) if len(sys.argv) > 3 else 60
res={k:[] for k in ['exec_before','exec_after','run_before','run_after']}
def t(cmd, inp=None):
    t0=time.perf_counter(); r=subprocess.run(cmd,input=inp,stdout=subprocess.DEVNULL,stderr=subprocess.DEVNULL); dt=time.perf_counter()-t0
    return dt*1000, r.returncode
for i in range(N):
    order=[('before',A),('after',B)] if i%2==0 else [('after',B),('before',A)]
    for name,b in order:
        ms,rc=t([b,'exec','--','/bin/true']); assert rc==0,(name,rc); res['exec_'+name].append(ms)
    for name,b in order:
        ms,rc=t([b,'run','-'],act); assert rc==0,(name,rc); res['run_'+name].append(ms)
for k in ['exec','run']:
    a=statistics.median(res[k+'_before']); b=statistics.median(res[k+'_after'])
    print(f"{k:5s} before {a:6.2f} ms  after {b:6.2f} ms  after/before {b/a:.2f}  (p90 {sorted(res[k+'_before'])[int(N*.9)]:.1f} / {sorted(res[k+'_after'])[int(N*.9)]:.1f})")
