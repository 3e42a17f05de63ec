package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

var values = []int{1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1}
var symbols = []string{"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"}
var letter = map[byte]int{'I': 1, 'V': 5, 'X': 10, 'L': 50, 'C': 100, 'D': 500, 'M': 1000}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var q int
	fmt.Fscan(in, &q)
	for k := 0; k < q; k++ {
		var tok string
		fmt.Fscan(in, &tok)
		if n, err := strconv.Atoi(tok); err == nil {
			var sb strings.Builder
			for i, v := range values {
				for n >= v {
					sb.WriteString(symbols[i])
					n -= v
				}
			}
			fmt.Fprintln(out, sb.String())
		} else {
			total := 0
			for i := 0; i < len(tok); i++ {
				v := letter[tok[i]]
				if i+1 < len(tok) && letter[tok[i+1]] > v {
					total -= v
				} else {
					total += v
				}
			}
			fmt.Fprintln(out, total)
		}
	}
}
