read -r n q
read -r -a a
prefix=(0)
for ((i = 0; i < n; i++)); do
    prefix[i + 1]=$((prefix[i] + a[i]))
done
for ((k = 0; k < q; k++)); do
    read -r l r
    echo $((prefix[r] - prefix[l - 1]))
done
