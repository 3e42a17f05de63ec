package main

import (
	"bufio"
	"fmt"
	"os"
)

const mod = 1000000007

func fib(n uint64) int64 {
	var a, b int64 = 0, 1
	for bit := 62; bit >= 0; bit-- {
		c := a * ((2*b - a + mod) % mod) % mod
		d := (a*a + b*b) % mod
		if (n>>uint(bit))&1 == 1 {
			a, b = d, (c+d)%mod
		} else {
			a, b = c, d
		}
	}
	return a
}

func main() {
	in := bufio.NewReader(os.Stdin)
	var t int
	fmt.Fscan(in, &t)
	for ; t > 0; t-- {
		var n uint64
		fmt.Fscan(in, &n)
		fmt.Println(fib(n))
	}
}
