#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n, q;
    if (scanf("%d %d", &n, &q) != 2) return 1;
    long long *prefix = calloc((size_t)n + 1, sizeof(long long));
    if (prefix == NULL) return 1;
    for (int i = 0; i < n; i++) {
        long long x;
        if (scanf("%lld", &x) != 1) return 1;
        prefix[i + 1] = prefix[i] + x;
    }
    while (q-- > 0) {
        int l, r;
        if (scanf("%d %d", &l, &r) != 2) return 1;
        printf("%lld\n", prefix[r] - prefix[l - 1]);
    }
    free(prefix);
    return 0;
}
