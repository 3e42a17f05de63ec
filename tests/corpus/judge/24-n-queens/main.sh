# Bash builtins only: bitmask backtracking; place adds to the global $count.
read -r n
full=$(( (1 << n) - 1 ))
count=0
place() {
    local cols=$1 d1=$2 d2=$3 free bit
    if (( cols == full )); then
        count=$(( count + 1 ))
        return
    fi
    free=$(( full & ~(cols | d1 | d2) ))
    while (( free )); do
        bit=$(( free & -free ))
        free=$(( free - bit ))
        place $(( cols | bit )) $(( ((d1 | bit) << 1) & full )) $(( (d2 | bit) >> 1 ))
    done
}
place 0 0 0
printf '%s\n' "$count"
