#include <stdio.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    long long best = 0, cur = 0; /* bug: all-negative input must not answer 0 */
    for (int i = 0; i < n; i++) {
        long long x;
        if (scanf("%lld", &x) != 1) return 1;
        cur = cur + x > x ? cur + x : x;
        if (cur > best) best = cur;
    }
    printf("%lld\n", best);
    return 0;
}
