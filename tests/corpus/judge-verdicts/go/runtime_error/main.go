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
	adj := make([][]int, n) // bug: tasks are numbered 1..n; adj[n] panics
	indeg := make([]int, n+1)
	for i := 0; i < m; i++ {
		var u, v int
		fmt.Fscan(in, &u, &v)
		adj[u] = append(adj[u], v)
		indeg[v]++
	}
	var order []string
	done := make([]bool, n+1)
	for {
		u := 0
		for v := 1; v <= n; v++ {
			if !done[v] && indeg[v] == 0 {
				u = v
				break
			}
		}
		if u == 0 {
			break
		}
		done[u] = true
		order = append(order, strconv.Itoa(u))
		for _, v := range adj[u] {
			indeg[v]--
		}
	}
	fmt.Println(strings.Join(order, " "))
}
