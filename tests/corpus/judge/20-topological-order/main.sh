# Bash builtins only: Kahn's algorithm, the smallest ready task found by scanning.
read -r -d '' -a t
n=${t[0]} m=${t[1]}
for (( v = 0; v <= n; v++ )); do head[v]=-1; indeg[v]=0; done
for (( e = 0; e < m; e++ )); do
    u=${t[2 + 2 * e]}
    to[e]=${t[3 + 2 * e]}
    nxt[e]=${head[u]}
    head[u]=$e
    indeg[to[e]]=$(( indeg[to[e]] + 1 ))
done
for (( v = 1; v <= n; v++ )); do ready[v]=$(( indeg[v] == 0 )); done
order=()
while :; do
    u=0
    for (( v = 1; v <= n; v++ )); do
        if (( ready[v] )); then u=$v; break; fi
    done
    (( u == 0 )) && break
    ready[u]=0
    order+=("$u")
    for (( e = head[u]; e >= 0; e = nxt[e] )); do
        v=${to[e]}
        indeg[v]=$(( indeg[v] - 1 ))
        (( indeg[v] == 0 )) && ready[v]=1
    done
done
if (( ${#order[@]} < n )); then
    printf 'IMPOSSIBLE\n'
else
    printf '%s\n' "${order[*]}"
fi
