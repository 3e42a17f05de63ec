# Breadth-first search over a flattened grid; the queue is an array with a head index.
read -r r c
grid=""
for ((i = 0; i < r; i++)); do
    read -r row
    grid+=$row
done
dist=()
queue=()
tail=0
for ((k = 0; k < r * c; k++)); do
    if [[ ${grid:k:1} == S ]]; then
        dist[k]=0
        queue[tail++]=$k
    fi
done
di=(1 -1 0 0)
dj=(0 0 1 -1)
answer=-1
for ((head = 0; head < tail; head++)); do
    cur=${queue[head]}
    if [[ ${grid:cur:1} == T ]]; then
        answer=${dist[cur]}
        break
    fi
    ((i = cur / c, j = cur % c))
    for ((d = 0; d < 4; d++)); do
        ((a = i + di[d], b = j + dj[d]))
        ((a < 0 || a >= r || b < 0 || b >= c)) && continue
        ((n = a * c + b))
        [[ ${grid:n:1} == '#' || -n ${dist[n]} ]] && continue
        dist[n]=$((dist[cur] + 1))
        queue[tail++]=$n
    done
done
echo "$answer"
