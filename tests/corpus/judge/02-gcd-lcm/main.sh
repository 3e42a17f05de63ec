read -r -d '' -a t || true
n=${t[0]}
for ((i = 0; i < n; i++)); do
    a=${t[1 + 2 * i]}
    b=${t[2 + 2 * i]}
    x=$a
    y=$b
    while ((y != 0)); do
        ((r = x % y, x = y, y = r))
    done
    printf '%d %d\n' "$x" $((a / x * b))
done
