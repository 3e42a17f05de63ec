package main

import "fmt"

var full int

func place(cols, d1, d2 int) int {
	if cols == full {
		return 1
	}
	count := 0
	for free := full &^ (cols | d1 | d2); free != 0; {
		bit := free & -free
		free -= bit
		count += place(cols|bit, ((d1|bit)<<1)&full, (d2|bit)>>1)
	}
	return count
}

func main() {
	var n int
	fmt.Scan(&n)
	full = 1<<n - 1
	fmt.Println(place(0, 0, 0))
}
