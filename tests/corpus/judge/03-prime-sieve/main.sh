read -r n
composite=()
count=0
total=0
for ((i = 2; i <= n; i++)); do
    [[ -n ${composite[i]} ]] && continue
    ((count++, total += i))
    for ((j = i * i; j <= n; j += i)); do
        composite[j]=1
    done
done
echo "$count $total"
