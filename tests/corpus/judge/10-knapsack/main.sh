read -r n cap
best=()
for ((c = 0; c <= cap; c++)); do best[c]=0; done
for ((i = 0; i < n; i++)); do
    read -r w v
    for ((c = cap; c >= w; c--)); do
        ((best[c - w] + v > best[c] && (best[c] = best[c - w] + v)))
    done
done
echo "${best[cap]}"
