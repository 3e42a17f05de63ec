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
	var n, m, p int
	fmt.Fscan(in, &n, &m, &p)
	a := make([][]int64, n)
	for i := range a {
		a[i] = make([]int64, m)
		for k := range a[i] {
			fmt.Fscan(in, &a[i][k])
		}
	}
	b := make([][]int64, m)
	for k := range b {
		b[k] = make([]int64, p)
		for j := range b[k] {
			fmt.Fscan(in, &b[k][j])
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < p; j++ {
			var s int64
			for k := 0; k < m; k++ {
				s += a[i][k] * b[k][j]
			}
			if j > 0 {
				fmt.Fprint(out, " ")
			}
			fmt.Fprint(out, s)
		}
		fmt.Fprintln(out)
	}
}
