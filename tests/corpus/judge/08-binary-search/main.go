package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var n, q int
	fmt.Fscan(in, &n)
	a := make([]int64, n)
	for i := range a {
		fmt.Fscan(in, &a[i])
	}
	fmt.Fscan(in, &q)
	for ; q > 0; q-- {
		var x int64
		fmt.Fscan(in, &x)
		fmt.Fprintln(out, sort.Search(n, func(i int) bool { return a[i] > x }))
	}
}
