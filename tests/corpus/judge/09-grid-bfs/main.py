import sys
from collections import deque


def main():
    data = sys.stdin.read().split()
    r, c = int(data[0]), int(data[1])
    grid = data[2 : 2 + r]
    start = next((i, j) for i in range(r) for j in range(c) if grid[i][j] == "S")
    dist = [[-1] * c for _ in range(r)]
    dist[start[0]][start[1]] = 0
    queue = deque([start])
    while queue:
        i, j = queue.popleft()
        if grid[i][j] == "T":
            print(dist[i][j])
            return
        for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            a, b = i + di, j + dj
            if 0 <= a < r and 0 <= b < c and grid[a][b] != "#" and dist[a][b] < 0:
                dist[a][b] = dist[i][j] + 1
                queue.append((a, b))
    print(-1)


main()
