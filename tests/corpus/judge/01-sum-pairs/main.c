#include <stdio.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    for (int i = 0; i < n; i++) {
        long long a, b;
        if (scanf("%lld %lld", &a, &b) != 2) return 1;
        printf("%lld\n", a + b);
    }
    return 0;
}
