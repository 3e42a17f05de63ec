import sys


def main():
    n = int(sys.stdin.read().split()[0])
    sieve = bytearray([1]) * (n + 1)
    sieve[0:2] = b"\x00\x00"[: min(2, n + 1)]
    i = 2
    while i * i <= n:
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(range(i * i, n + 1, i)))
        i += 1
    count = 0
    total = 0
    for p in range(2, n + 1):
        if sieve[p]:
            count += 1
            total += p
    print(count, total)


main()
