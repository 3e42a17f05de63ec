package main

import (
	"fmt"
	"strconv"
	"strings"
)

func main() {
	var n uint64
	var b int
	fmt.Scan(&n, &b)
	// FormatUint writes lowercase letters for digits above 9; the answer wants uppercase.
	fmt.Println(strings.ToUpper(strconv.FormatUint(n, b)))
}
