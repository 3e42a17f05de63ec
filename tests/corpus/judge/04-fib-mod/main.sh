MOD=1000000007
read -r t
for ((q = 0; q < t; q++)); do
    read -r n
    a=0
    b=1
    for ((bit = 62; bit >= 0; bit--)); do
        ((c = a * ((2 * b - a + MOD) % MOD) % MOD))
        ((d = (a * a + b * b) % MOD))
        if (((n >> bit) & 1)); then
            ((a = d, b = (c + d) % MOD))
        else
            ((a = c, b = d))
        fi
    done
    echo "$a"
done
