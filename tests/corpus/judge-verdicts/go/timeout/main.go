package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	a := make([]int64, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	best, cur := a[0], int64(0)
	i := 0
	for i < n { // bug: i is never advanced, so this never ends (and allocates nothing)
		if cur+a[i] > a[i] {
			cur += a[i]
		} else {
			cur = a[i]
		}
		if cur > best {
			best = cur
		}
	}
	fmt.Println(best)
}
