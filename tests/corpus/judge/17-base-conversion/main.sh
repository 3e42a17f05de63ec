# Bash builtins only; bash arithmetic is 64-bit, and n <= 10^18 fits.
digits=0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ
read -r n b
out=""
while :; do
    out="${digits:n % b:1}$out"
    n=$((n / b))
    (( n > 0 )) || break
done
printf '%s\n' "$out"
