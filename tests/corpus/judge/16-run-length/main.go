package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

func main() {
	var s string
	fmt.Fscan(bufio.NewReader(os.Stdin), &s)
	var out strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		out.WriteByte(s[i])
		out.WriteString(strconv.Itoa(j - i))
		i = j
	}
	fmt.Println(out.String())
}
