import sys

data = sys.stdin.buffer.read().split()
n, m = int(data[0]), int(data[1])
parent = list(range(n + 1))


def find(x):
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


groups = n
for i in range(m):
    a = find(int(data[2 + 2 * i]))
    b = find(int(data[3 + 2 * i]))
    if a != b:
        parent[a] = b
        groups -= 1
print(groups)
