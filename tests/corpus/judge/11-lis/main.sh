read -r n
read -r -a a
tails=()
len=0
for ((k = 0; k < n; k++)); do
    x=${a[k]}
    lo=0
    hi=$len
    while ((lo < hi)); do
        ((mid = (lo + hi) / 2))
        if ((tails[mid] < x)); then ((lo = mid + 1)); else ((hi = mid)); fi
    done
    tails[lo]=$x
    ((lo == len && len++))
done
echo "$len"
