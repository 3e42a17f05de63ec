# Bash builtins only: O(n^2) Dijkstra, an edge list chained per node.
read -r -d '' -a t
n=${t[0]} m=${t[1]} s=${t[2]}
for (( v = 1; v <= n; v++ )); do head[v]=-1; dist[v]=-1; done
for (( e = 0; e < m; e++ )); do
    u=${t[3 + 3 * e]}
    to[e]=${t[4 + 3 * e]}
    w[e]=${t[5 + 3 * e]}
    nxt[e]=${head[u]}
    head[u]=$e
done
dist[s]=0
for (( round = 0; round < n; round++ )); do
    u=0
    for (( v = 1; v <= n; v++ )); do
        if (( !done[v] && dist[v] >= 0 && (u == 0 || dist[v] < dist[u]) )); then u=$v; fi
    done
    (( u == 0 )) && break
    done[u]=1
    for (( e = head[u]; e >= 0; e = nxt[e] )); do
        v=${to[e]}
        nd=$(( dist[u] + w[e] ))
        if (( dist[v] < 0 || nd < dist[v] )); then dist[v]=$nd; fi
    done
done
out=${dist[1]}
for (( v = 2; v <= n; v++ )); do out+=" ${dist[v]}"; done
printf '%s\n' "$out"
