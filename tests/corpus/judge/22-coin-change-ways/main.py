import sys

MOD = 1000000007
data = sys.stdin.read().split()
n, t = int(data[0]), int(data[1])
ways = [0] * (t + 1)
ways[0] = 1
for c in map(int, data[2:2 + n]):
    for x in range(c, t + 1):
        ways[x] = (ways[x] + ways[x - c]) % MOD
print(ways[t])
