#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    long long *xs = malloc(sizeof(long long) * (size_t)n);
    if (xs == NULL) return 1;
    for (int i = 0; i < n; i++)
        if (scanf("%lld", &xs[i]) != 1) return 1;
    qsort(xs, (size_t)n, sizeof(long long), cmp);
    for (int i = 0; i < n; i++) printf(i ? " %lld" : "%lld", xs[i]);
    printf("\n");
    free(xs);
    return 0;
}
