package main

import (
	"bufio"
	"container/heap"
	"fmt"
	"os"
	"strconv"
	"strings"
)

type edge struct{ to, w int64 }
type item struct{ d, v int64 }
type minHeap []item

func (h minHeap) Len() int            { return len(h) }
func (h minHeap) Less(i, j int) bool  { return h[i].d < h[j].d }
func (h minHeap) Swap(i, j int)       { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x interface{}) { *h = append(*h, x.(item)) }
func (h *minHeap) Pop() interface{} {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func main() {
	in := bufio.NewReader(os.Stdin)
	var n, m, s int
	fmt.Fscan(in, &n, &m, &s)
	adj := make([][]edge, n+1)
	for i := 0; i < m; i++ {
		var u int
		var v, w int64
		fmt.Fscan(in, &u, &v, &w)
		adj[u] = append(adj[u], edge{v, w})
	}
	dist := make([]int64, n+1)
	for i := range dist {
		dist[i] = -1
	}
	dist[s] = 0
	h := &minHeap{{0, int64(s)}}
	for h.Len() > 0 {
		it := heap.Pop(h).(item)
		if it.d > dist[it.v] {
			continue
		}
		for _, e := range adj[it.v] {
			nd := it.d + e.w
			if dist[e.to] == -1 || nd < dist[e.to] {
				dist[e.to] = nd
				heap.Push(h, item{nd, e.to})
			}
		}
	}
	parts := make([]string, n)
	for i := 1; i <= n; i++ {
		parts[i-1] = strconv.FormatInt(dist[i], 10)
	}
	fmt.Println(strings.Join(parts, " "))
}
