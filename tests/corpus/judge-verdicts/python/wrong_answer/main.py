import sys

data = sys.stdin.read().split()
n = int(data[0])
best = 0  # bug: a streak must be non-empty, so all-negative input must not answer 0
cur = 0
for tok in data[1:1 + n]:
    cur = max(int(tok), cur + int(tok))
    best = max(best, cur)
print(best)
