import sys

data = sys.stdin.read().split()
n = int(data[0])
iv = sorted((int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n))
merged = []
for l, r in iv:
    if merged and l <= merged[-1][1]:
        if r > merged[-1][1]:
            merged[-1][1] = r
    else:
        merged.append([l, r])
print("\n".join(f"{l} {r}" for l, r in merged))
