package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	var tails []int64
	for k := 0; k < n; k++ {
		var x int64
		fmt.Fscan(in, &x)
		i := sort.Search(len(tails), func(j int) bool { return tails[j] >= x })
		if i == len(tails) {
			tails = append(tails, x)
		} else {
			tails[i] = x
		}
	}
	fmt.Println(len(tails))
}
