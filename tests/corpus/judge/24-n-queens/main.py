import sys

n = int(sys.stdin.read().split()[0])
full = (1 << n) - 1


def place(cols, diag1, diag2):
    if cols == full:
        return 1
    count = 0
    free = full & ~(cols | diag1 | diag2)
    while free:
        bit = free & -free
        free -= bit
        count += place(cols | bit, ((diag1 | bit) << 1) & full, (diag2 | bit) >> 1)
    return count


print(place(0, 0, 0))
