package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n, m int
	fmt.Fscan(in, &n, &m)
	parent := make([]int, n+1)
	for i := range parent {
		parent[i] = i
	}
	find := func(x int) int {
		root := x
		for parent[root] != root {
			root = parent[root]
		}
		for parent[x] != root {
			parent[x], x = root, parent[x]
		}
		return root
	}
	groups := n
	for i := 0; i < m; i++ {
		var a, b int
		fmt.Fscan(in, &a, &b)
		ra, rb := find(a), find(b)
		if ra != rb {
			parent[ra] = rb
			groups--
		}
	}
	fmt.Println(groups)
}
