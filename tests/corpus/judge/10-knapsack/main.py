import sys


def main():
    data = list(map(int, sys.stdin.read().split()))
    n, cap = data[0], data[1]
    best = [0] * (cap + 1)
    for i in range(n):
        w, v = data[2 + 2 * i], data[3 + 2 * i]
        for c in range(cap, w - 1, -1):
            if best[c - w] + v > best[c]:
                best[c] = best[c - w] + v
    print(best[cap])


main()
