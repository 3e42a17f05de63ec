read -r a
read -r b
n=${#a}
m=${#b}
prev=()
for ((j = 0; j <= m; j++)); do prev[j]=0; done
for ((i = 0; i < n; i++)); do
    ca=${a:i:1}
    cur=(0)
    for ((j = 0; j < m; j++)); do
        if [[ $ca == "${b:j:1}" ]]; then
            cur[j + 1]=$((prev[j] + 1))
        elif ((prev[j + 1] > cur[j])); then
            cur[j + 1]=${prev[j + 1]}
        else
            cur[j + 1]=${cur[j]}
        fi
    done
    prev=("${cur[@]}")
done
echo "${prev[m]}"
