# Bash builtins only.
read -r s
out=""
n=${#s}
i=0
while (( i < n )); do
    c=${s:i:1}
    j=$i
    while (( j < n )) && [[ ${s:j:1} == "$c" ]]; do
        j=$((j + 1))
    done
    out+="$c$((j - i))"
    i=$j
done
printf '%s\n' "$out"
