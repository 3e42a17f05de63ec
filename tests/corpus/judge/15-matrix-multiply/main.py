import sys

data = list(map(int, sys.stdin.read().split()))
n, m, p = data[0], data[1], data[2]
a = [data[3 + i * m : 3 + (i + 1) * m] for i in range(n)]
off = 3 + n * m
b = [data[off + k * p : off + (k + 1) * p] for k in range(m)]
for i in range(n):
    row = [sum(a[i][k] * b[k][j] for k in range(m)) for j in range(p)]
    print(" ".join(map(str, row)))
