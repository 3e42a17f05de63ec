# Bash builtins only: Kadane's algorithm.
read -r -d '' -a t
n=${t[0]}
best=${t[1]}
cur=${t[1]}
for (( i = 2; i <= n; i++ )); do
    x=${t[i]}
    if (( cur < 0 )); then cur=$x; else cur=$(( cur + x )); fi
    (( cur > best )) && best=$cur
done
printf '%s\n' "$best"
