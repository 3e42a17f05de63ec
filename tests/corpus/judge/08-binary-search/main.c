#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n, q;
    if (scanf("%d", &n) != 1) return 1;
    long long *a = malloc(sizeof(long long) * (size_t)n);
    if (a == NULL) return 1;
    for (int i = 0; i < n; i++)
        if (scanf("%lld", &a[i]) != 1) return 1;
    if (scanf("%d", &q) != 1) return 1;
    while (q-- > 0) {
        long long x;
        if (scanf("%lld", &x) != 1) return 1;
        int lo = 0, hi = n;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (a[mid] <= x)
                lo = mid + 1;
            else
                hi = mid;
        }
        printf("%d\n", lo);
    }
    free(a);
    return 0;
}
