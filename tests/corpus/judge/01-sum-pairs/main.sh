read -r -d '' -a t || true
n=${t[0]}
for ((i = 0; i < n; i++)); do
    printf '%d\n' $(( t[1 + 2 * i] + t[2 + 2 * i] ))
done
