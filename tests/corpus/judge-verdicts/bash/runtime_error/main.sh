read -r -d '' -a t
n=${t[0]} m=${t[1]}
for (( e = 0; e < m; e++ )); do
    u=${t[2 + 2 * e]} v=${t[3 + 2 * e]}
    # bug: the range check is off by one (tasks are numbered 1..n), so a rule naming task n
    # ends the script with exit status 3
    if (( u < 1 || u >= n || v < 1 || v >= n )); then
        printf 'bad task number in rule %d\n' "$e" >&2
        exit 3
    fi
    indeg[v]=$(( ${indeg[v]:-0} + 1 ))
done
printf 'not reached for this input\n'
