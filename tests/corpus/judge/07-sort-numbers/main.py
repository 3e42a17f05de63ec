import sys

data = sys.stdin.read().split()
n = int(data[0])
print(" ".join(map(str, sorted(int(x) for x in data[1 : 1 + n]))))
