package main

import (
	"fmt"
	"strconv"
	"strings"
)

func main() {
	var n int
	fmt.Scan(&n)
	row := make([]uint64, n+1)
	row[0] = 1
	for k := 1; k <= n; k++ {
		row[k] = 1
		for i := k - 1; i > 0; i-- {
			row[i] += row[i-1]
		}
	}
	parts := make([]string, n+1)
	for i, v := range row {
		parts[i] = strconv.FormatUint(v, 10)
	}
	fmt.Println(strings.Join(parts, " "))
}
