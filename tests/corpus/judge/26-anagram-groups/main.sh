# Bash builtins only. A word's letters in order: for each letter of the alphabet, keep
# only that letter's occurrences, and concatenate.
read -r -d '' -a t
n=${t[0]}
declare -A groups=()
for (( i = 1; i <= n; i++ )); do
    w=${t[i]}
    key=""
    for l in a b c d e f g h i j k l m n o p q r s t u v w x y z; do
        key+=${w//[^$l]/}
    done
    groups[$key]=$(( ${groups[$key]:-0} + 1 ))
done
largest=0
for key in "${!groups[@]}"; do
    (( groups[$key] > largest )) && largest=${groups[$key]}
done
printf '%s\n%s\n' "${#groups[@]}" "$largest"
