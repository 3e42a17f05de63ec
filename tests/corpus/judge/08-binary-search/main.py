import sys
from bisect import bisect_right

data = sys.stdin.read().split()
n = int(data[0])
a = [int(x) for x in data[1 : 1 + n]]
q = int(data[1 + n])
out = [str(bisect_right(a, int(x))) for x in data[2 + n : 2 + n + q]]
print("\n".join(out))
