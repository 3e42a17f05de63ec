package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var n int
	fmt.Fscan(in, &n)
	xs := make([]int, n)
	for i := range xs {
		fmt.Fscan(in, &xs[i])
	}
	sort.Ints(xs)
	parts := make([]string, n)
	for i, x := range xs {
		parts[i] = strconv.Itoa(x)
	}
	fmt.Println(strings.Join(parts, " "))
}
