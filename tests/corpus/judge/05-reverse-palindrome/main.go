package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var t int
	fmt.Fscan(in, &t)
	for ; t > 0; t-- {
		var w string
		fmt.Fscan(in, &w)
		b := []byte(w)
		for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
			b[i], b[j] = b[j], b[i]
		}
		r := string(b)
		verdict := "no"
		if r == w {
			verdict = "yes"
		}
		fmt.Println(r, verdict)
	}
}
