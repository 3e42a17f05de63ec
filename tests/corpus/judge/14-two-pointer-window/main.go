package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	var budget int64
	fmt.Fscan(in, &n, &budget)
	a := make([]int64, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	var total int64
	best, left := 0, 0
	for right := 0; right < n; right++ {
		total += a[right]
		for total > budget {
			total -= a[left]
			left++
		}
		if right-left+1 > best {
			best = right - left + 1
		}
	}
	fmt.Println(best)
}
