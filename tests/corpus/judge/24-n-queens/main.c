#include <stdio.h>

static int full;

static long place(int cols, int d1, int d2) {
    if (cols == full) return 1;
    long count = 0;
    int free_cells = full & ~(cols | d1 | d2);
    while (free_cells) {
        int bit = free_cells & -free_cells;
        free_cells -= bit;
        count += place(cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1);
    }
    return count;
}

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    full = (1 << n) - 1;
    printf("%ld\n", place(0, 0, 0));
    return 0;
}
