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
	var n int
	fmt.Fscan(in, &n)
	iv := make([][2]int64, n)
	for i := range iv {
		fmt.Fscan(in, &iv[i][0], &iv[i][1])
	}
	sort.Slice(iv, func(a, b int) bool {
		if iv[a][0] != iv[b][0] {
			return iv[a][0] < iv[b][0]
		}
		return iv[a][1] < iv[b][1]
	})
	cl, cr := iv[0][0], iv[0][1]
	for _, p := range iv[1:] {
		if p[0] <= cr {
			if p[1] > cr {
				cr = p[1]
			}
		} else {
			fmt.Fprintln(out, cl, cr)
			cl, cr = p[0], p[1]
		}
	}
	fmt.Fprintln(out, cl, cr)
}
