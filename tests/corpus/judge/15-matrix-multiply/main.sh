read -r -d '' -a t || true
n=${t[0]}
m=${t[1]}
p=${t[2]}
((offb = 3 + n * m))
for ((i = 0; i < n; i++)); do
    row=()
    for ((j = 0; j < p; j++)); do
        s=0
        for ((k = 0; k < m; k++)); do
            ((s += t[3 + i * m + k] * t[offb + k * p + j]))
        done
        row+=("$s")
    done
    echo "${row[*]}"
done
