# Bash builtins only: union-find; find leaves the root in $root.
read -r -d '' -a t
n=${t[0]} m=${t[1]}
for (( i = 0; i <= n; i++ )); do parent[i]=$i; done
find() {
    root=$1
    while (( parent[root] != root )); do root=${parent[root]}; done
    local x=$1 next
    while (( parent[x] != root )); do
        next=${parent[x]}
        parent[x]=$root
        x=$next
    done
}
groups=$n
for (( i = 0; i < m; i++ )); do
    find "${t[2 + 2 * i]}"; a=$root
    find "${t[3 + 2 * i]}"; b=$root
    if (( a != b )); then
        parent[a]=$b
        groups=$((groups - 1))
    fi
done
printf '%s\n' "$groups"
