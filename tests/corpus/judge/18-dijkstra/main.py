import heapq
import sys

data = sys.stdin.buffer.read().split()
n, m, s = int(data[0]), int(data[1]), int(data[2])
adj = [[] for _ in range(n + 1)]
p = 3
for _ in range(m):
    u, v, w = int(data[p]), int(data[p + 1]), int(data[p + 2])
    p += 3
    adj[u].append((v, w))
INF = float("inf")
dist = [INF] * (n + 1)
dist[s] = 0
heap = [(0, s)]
while heap:
    d, u = heapq.heappop(heap)
    if d > dist[u]:
        continue
    for v, w in adj[u]:
        nd = d + w
        if nd < dist[v]:
            dist[v] = nd
            heapq.heappush(heap, (nd, v))
print(" ".join(str(d) if d != INF else "-1" for d in dist[1:]))
