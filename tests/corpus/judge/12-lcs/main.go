package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var a, b string
	fmt.Fscan(in, &a, &b)
	prev := make([]int, len(b)+1)
	for i := 0; i < len(a); i++ {
		cur := make([]int, len(b)+1)
		for j := 0; j < len(b); j++ {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else if prev[j+1] > cur[j] {
				cur[j+1] = prev[j+1]
			} else {
				cur[j+1] = cur[j]
			}
		}
		prev = cur
	}
	fmt.Println(prev[len(b)])
}
