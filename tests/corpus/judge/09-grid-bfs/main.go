package main

import (
	"bufio"
	"fmt"
	"os"
)

func main() {
	in := bufio.NewReader(os.Stdin)
	var r, c int
	fmt.Fscan(in, &r, &c)
	grid := make([]string, r)
	dist := make([]int, r*c)
	var queue []int
	for i := 0; i < r; i++ {
		fmt.Fscan(in, &grid[i])
		for j := 0; j < c; j++ {
			dist[i*c+j] = -1
			if grid[i][j] == 'S' {
				dist[i*c+j] = 0
				queue = append(queue, i*c+j)
			}
		}
	}
	di := []int{1, -1, 0, 0}
	dj := []int{0, 0, 1, -1}
	for head := 0; head < len(queue); head++ {
		cur := queue[head]
		i, j := cur/c, cur%c
		if grid[i][j] == 'T' {
			fmt.Println(dist[cur])
			return
		}
		for k := 0; k < 4; k++ {
			a, b := i+di[k], j+dj[k]
			if a >= 0 && a < r && b >= 0 && b < c && grid[a][b] != '#' && dist[a*c+b] < 0 {
				dist[a*c+b] = dist[cur] + 1
				queue = append(queue, a*c+b)
			}
		}
	}
	fmt.Println(-1)
}
