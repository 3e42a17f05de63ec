# Bash builtins only: insertion sort by (l, r), then one sweep.
read -r -d '' -a t
n=${t[0]}
for (( i = 0; i < n; i++ )); do
    l=${t[1 + 2 * i]} r=${t[2 + 2 * i]}
    j=$(( i - 1 ))
    while (( j >= 0 && (L[j] > l || (L[j] == l && R[j] > r)) )); do
        L[j + 1]=${L[j]}
        R[j + 1]=${R[j]}
        j=$(( j - 1 ))
    done
    L[j + 1]=$l
    R[j + 1]=$r
done
cl=${L[0]} cr=${R[0]}
for (( i = 1; i < n; i++ )); do
    if (( L[i] <= cr )); then
        (( R[i] > cr )) && cr=${R[i]}
    else
        printf '%s %s\n' "$cl" "$cr"
        cl=${L[i]} cr=${R[i]}
    fi
done
printf '%s %s\n' "$cl" "$cr"
