import sys

data = list(map(int, sys.stdin.read().split()))
n, budget = data[0], data[1]
a = data[2 : 2 + n]
best = 0
total = 0
left = 0
for right in range(n):
    total += a[right]
    while total > budget:
        total -= a[left]
        left += 1
    best = max(best, right - left + 1)
print(best)
