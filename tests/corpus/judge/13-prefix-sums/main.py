import sys
from itertools import accumulate

data = sys.stdin.read().split()
n, q = int(data[0]), int(data[1])
prefix = [0] + list(accumulate(int(x) for x in data[2 : 2 + n]))
out = []
pos = 2 + n
for _ in range(q):
    left, right = int(data[pos]), int(data[pos + 1])
    pos += 2
    out.append(str(prefix[right] - prefix[left - 1]))
print("\n".join(out))
