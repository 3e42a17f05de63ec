package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n, cap int
	fmt.Fscan(in, &n, &cap)
	best := make([]int64, cap+1)
	for i := 0; i < n; i++ {
		var w int
		var v int64
		fmt.Fscan(in, &w, &v)
		for c := cap; c >= w; c-- {
			if best[c-w]+v > best[c] {
				best[c] = best[c-w] + v
			}
		}
	}
	fmt.Println(best[cap])
}
