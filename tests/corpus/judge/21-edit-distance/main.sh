# Bash builtins only: the classic two-row dynamic programme.
read -r a
read -r b
a=${a%$'\r'}
b=${b%$'\r'}
la=${#a} lb=${#b}
for (( j = 0; j <= lb; j++ )); do prev[j]=$j; done
for (( i = 1; i <= la; i++ )); do
    cur[0]=$i
    ca=${a:i-1:1}
    for (( j = 1; j <= lb; j++ )); do
        cost=1
        [[ $ca == "${b:j-1:1}" ]] && cost=0
        best=$(( prev[j] + 1 ))
        (( cur[j - 1] + 1 < best )) && best=$(( cur[j - 1] + 1 ))
        (( prev[j - 1] + cost < best )) && best=$(( prev[j - 1] + cost ))
        cur[j]=$best
    done
    prev=("${cur[@]}")
done
printf '%s\n' "${prev[lb]}"
