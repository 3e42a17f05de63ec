package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var n, q int
	fmt.Fscan(in, &n, &q)
	prefix := make([]int64, n+1)
	for i := 0; i < n; i++ {
		var x int64
		fmt.Fscan(in, &x)
		prefix[i+1] = prefix[i] + x
	}
	for ; q > 0; q-- {
		var l, r int
		fmt.Fscan(in, &l, &r)
		fmt.Fprintln(out, prefix[r]-prefix[l-1])
	}
}
