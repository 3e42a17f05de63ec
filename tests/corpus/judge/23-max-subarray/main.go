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
	var best, cur int64
	for i := 0; i < n; i++ {
		var x int64
		fmt.Fscan(in, &x)
		if i == 0 || cur < 0 {
			cur = x
		} else {
			cur += x
		}
		if i == 0 || cur > best {
			best = cur
		}
	}
	fmt.Println(best)
}
