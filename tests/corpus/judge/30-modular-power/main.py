import sys

data = sys.stdin.read().split()
q = int(data[0])
out = []
for i in range(q):
    a, b, m = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
    result = 1 % m
    base = a % m
    while b > 0:
        if b & 1:
            result = result * base % m
        base = base * base % m
        b >>= 1
    out.append(str(result))
print("\n".join(out))
