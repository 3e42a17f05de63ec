import sys

DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
n, b = map(int, sys.stdin.read().split())
if n == 0:
    print("0")
else:
    out = []
    while n > 0:
        out.append(DIGITS[n % b])
        n //= b
    print("".join(reversed(out)))
