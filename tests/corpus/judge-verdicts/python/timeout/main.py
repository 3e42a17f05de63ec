import sys

data = sys.stdin.read().split()
n = int(data[0])
a = [int(t) for t in data[1:1 + n]]
best = a[0]
cur = 0
i = 0
while i < n:  # bug: i is never advanced, so this never ends (and allocates nothing)
    cur = max(a[i], cur + a[i])
    best = max(best, cur)
print(best)
