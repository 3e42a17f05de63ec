import sys

MOD = 1_000_000_007


def fib(n):
    a, b = 0, 1  # F(0), F(1)
    for bit in range(n.bit_length() - 1, -1, -1):
        c = a * ((2 * b - a) % MOD) % MOD
        d = (a * a + b * b) % MOD
        if (n >> bit) & 1:
            a, b = d, (c + d) % MOD
        else:
            a, b = c, d
    return a


def main():
    data = sys.stdin.read().split()
    t = int(data[0])
    print("\n".join(str(fib(int(x))) for x in data[1 : 1 + t]))


main()
