#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    long long *tails = malloc(sizeof(long long) * (size_t)n);
    if (tails == NULL) return 1;
    int len = 0;
    for (int k = 0; k < n; k++) {
        long long x;
        if (scanf("%lld", &x) != 1) return 1;
        int lo = 0, hi = len;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (tails[mid] < x)
                lo = mid + 1;
            else
                hi = mid;
        }
        tails[lo] = x;
        if (lo == len) len++;
    }
    printf("%d\n", len);
    free(tails);
    return 0;
}
