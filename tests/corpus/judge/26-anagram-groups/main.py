import sys
from collections import Counter

data = sys.stdin.read().split()
n = int(data[0])
groups = Counter("".join(sorted(w)) for w in data[1:1 + n])
print(len(groups))
print(max(groups.values()))
