# Bash builtins only; C(60, 30) < 2^63 fits bash's 64-bit arithmetic.
read -r n
row=(1)
for (( k = 1; k <= n; k++ )); do
    row[k]=1
    for (( i = k - 1; i > 0; i-- )); do
        row[i]=$(( row[i] + row[i - 1] ))
    done
done
printf '%s\n' "${row[*]}"
