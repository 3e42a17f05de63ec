package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n, m int
	fmt.Fscan(in, &n, &m)
	adj := make([][]int, n+1)
	indeg := make([]int, n+1)
	for i := 0; i < m; i++ {
		var u, v int
		fmt.Fscan(in, &u, &v)
		adj[u] = append(adj[u], v)
		indeg[v]++
	}
	// n is small: pick the smallest ready task by scanning.
	ready := make([]bool, n+1)
	for v := 1; v <= n; v++ {
		ready[v] = indeg[v] == 0
	}
	order := make([]string, 0, n)
	for {
		u := 0
		for v := 1; v <= n; v++ {
			if ready[v] {
				u = v
				break
			}
		}
		if u == 0 {
			break
		}
		ready[u] = false
		order = append(order, strconv.Itoa(u))
		for _, v := range adj[u] {
			indeg[v]--
			if indeg[v] == 0 {
				ready[v] = true
			}
		}
	}
	if len(order) < n {
		fmt.Println("IMPOSSIBLE")
	} else {
		fmt.Println(strings.Join(order, " "))
	}
}
