read -r t
for ((q = 0; q < t; q++)); do
    read -r w
    r=""
    for ((i = ${#w} - 1; i >= 0; i--)); do
        r+=${w:i:1}
    done
    if [[ $r == "$w" ]]; then
        echo "$r yes"
    else
        echo "$r no"
    fi
done
