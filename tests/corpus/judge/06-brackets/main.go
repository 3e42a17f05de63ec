package main

import (
	"bufio"
	"fmt"
	"os"
)

func balanced(s string) bool {
	want := map[byte]byte{')': '(', ']': '[', '}': '{'}
	var st []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '(' || c == '[' || c == '{' {
			st = append(st, c)
			continue
		}
		if len(st) == 0 || st[len(st)-1] != want[c] {
			return false
		}
		st = st[:len(st)-1]
	}
	return len(st) == 0
}

func main() {
	in := bufio.NewReader(os.Stdin)
	var t int
	fmt.Fscan(in, &t)
	for ; t > 0; t-- {
		var s string
		fmt.Fscan(in, &s)
		if balanced(s) {
			fmt.Println("YES")
		} else {
			fmt.Println("NO")
		}
	}
}
