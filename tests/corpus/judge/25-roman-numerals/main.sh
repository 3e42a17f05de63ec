# Bash builtins only.
values=(1000 900 500 400 100 90 50 40 10 9 5 4 1)
symbols=(M CM D CD C XC L XL X IX V IV I)
declare -A letter=([I]=1 [V]=5 [X]=10 [L]=50 [C]=100 [D]=500 [M]=1000)
read -r -d '' -a t
q=${t[0]}
for (( k = 1; k <= q; k++ )); do
    tok=${t[k]}
    if [[ $tok =~ ^[0-9]+$ ]]; then
        n=$(( 10#$tok ))
        out=""
        for (( i = 0; i < 13; i++ )); do
            while (( n >= values[i] )); do
                out+=${symbols[i]}
                n=$(( n - values[i] ))
            done
        done
        printf '%s\n' "$out"
    else
        total=0
        len=${#tok}
        for (( i = 0; i < len; i++ )); do
            v=${letter[${tok:i:1}]}
            if (( i + 1 < len && ${letter[${tok:i+1:1}]} > v )); then
                total=$(( total - v ))
            else
                total=$(( total + v ))
            fi
        done
        printf '%s\n' "$total"
    fi
done
