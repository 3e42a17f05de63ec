#include <stdio.h>

int main(void) {
    int n;
    long long a[1000];
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++)
        if (scanf("%lld", &a[i]) != 1) return 1;
    /* volatile: the compiler may not assume this side-effect-free loop ends and drop it */
    volatile long long best = a[0], cur = 0;
    int i = 0;
    while (i < n) { /* bug: i is never advanced, so this never ends */
        cur = cur + a[i] > a[i] ? cur + a[i] : a[i];
        if (cur > best) best = cur;
    }
    printf("%lld\n", best);
    return 0;
}
