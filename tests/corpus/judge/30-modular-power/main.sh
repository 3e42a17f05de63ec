# Bash builtins only; m <= 10^9, so (m-1)^2 fits bash's 64-bit arithmetic.
read -r -d '' -a t
q=${t[0]}
for (( k = 0; k < q; k++ )); do
    a=${t[1 + 3 * k]} b=${t[2 + 3 * k]} m=${t[3 + 3 * k]}
    result=$(( 1 % m ))
    base=$(( a % m ))
    while (( b > 0 )); do
        (( b & 1 )) && result=$(( result * base % m ))
        base=$(( base * base % m ))
        b=$(( b >> 1 ))
    done
    printf '%s\n' "$result"
done
