read -r n
read -r -a a
read -r q
for ((k = 0; k < q; k++)); do
    read -r x
    lo=0
    hi=$n
    while ((lo < hi)); do
        ((mid = (lo + hi) / 2))
        if ((a[mid] <= x)); then ((lo = mid + 1)); else ((hi = mid)); fi
    done
    echo "$lo"
done
