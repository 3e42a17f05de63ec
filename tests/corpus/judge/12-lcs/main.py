import sys

a, b = sys.stdin.read().split()[:2]
prev = [0] * (len(b) + 1)
for ca in a:
    cur = [0] * (len(b) + 1)
    for j, cb in enumerate(b):
        cur[j + 1] = prev[j] + 1 if ca == cb else max(prev[j + 1], cur[j])
    prev = cur
print(prev[-1])
