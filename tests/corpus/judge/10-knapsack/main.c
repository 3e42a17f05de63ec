#include <stdio.h>

int main(void) {
    int n, cap;
    static long long best[1001];
    if (scanf("%d %d", &n, &cap) != 2) return 1;
    for (int i = 0; i < n; i++) {
        int w;
        long long v;
        if (scanf("%d %lld", &w, &v) != 2) return 1;
        for (int c = cap; c >= w; c--)
            if (best[c - w] + v > best[c]) best[c] = best[c - w] + v;
    }
    printf("%lld\n", best[cap]);
    return 0;
}
