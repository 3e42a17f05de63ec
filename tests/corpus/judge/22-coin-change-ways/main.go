package main

import (
	"bufio"
	"fmt"
	"os"
)

const mod = 1000000007

func main() {
	in := bufio.NewReader(os.Stdin)
	var n, t int
	fmt.Fscan(in, &n, &t)
	ways := make([]int64, t+1)
	ways[0] = 1
	for i := 0; i < n; i++ {
		var c int
		fmt.Fscan(in, &c)
		for x := c; x <= t; x++ {
			ways[x] = (ways[x] + ways[x-c]) % mod
		}
	}
	fmt.Println(ways[t])
}
