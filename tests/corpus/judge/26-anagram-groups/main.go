package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	groups := map[string]int{}
	for i := 0; i < n; i++ {
		var w string
		fmt.Fscan(in, &w)
		b := []byte(w)
		sort.Slice(b, func(x, y int) bool { return b[x] < b[y] })
		groups[string(b)]++
	}
	largest := 0
	for _, size := range groups {
		if size > largest {
			largest = size
		}
	}
	fmt.Println(len(groups))
	fmt.Println(largest)
}
