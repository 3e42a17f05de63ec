read -r -d '' -a t
n=${t[0]}
best=${t[1]}
cur=0
i=1
while (( i <= n )); do # bug: i is never advanced, so this never ends
    x=${t[i]}
    if (( cur + x > x )); then cur=$(( cur + x )); else cur=$x; fi
    (( cur > best )) && best=$cur
done
printf '%s\n' "$best"
