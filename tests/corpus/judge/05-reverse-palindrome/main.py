import sys

data = sys.stdin.read().split()
t = int(data[0])
for w in data[1 : 1 + t]:
    r = w[::-1]
    print(r, "yes" if r == w else "no")
