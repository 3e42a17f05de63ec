package main

import (
	"bufio"
	"fmt"
	"os"
)

func power(a, b, m uint64) uint64 {
	result := 1 % m
	for a %= m; b > 0; b >>= 1 {
		if b&1 == 1 {
			result = result * a % m
		}
		a = a * a % m
	}
	return result
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var q int
	fmt.Fscan(in, &q)
	for i := 0; i < q; i++ {
		var a, b, m uint64
		fmt.Fscan(in, &a, &b, &m)
		fmt.Fprintln(out, power(a, b, m))
	}
}
