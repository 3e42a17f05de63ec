#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    char *composite = calloc((size_t)n + 1, 1);
    if (composite == NULL) return 1;
    long long count = 0, total = 0;
    for (long long i = 2; i <= n; i++) {
        if (composite[i]) continue;
        count++;
        total += i;
        for (long long j = i * i; j <= n; j += i) composite[j] = 1;
    }
    printf("%lld %lld\n", count, total);
    free(composite);
    return 0;
}
