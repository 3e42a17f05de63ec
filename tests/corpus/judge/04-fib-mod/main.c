#include <stdio.h>

#define MOD 1000000007LL

static long long fib(unsigned long long n) {
    long long a = 0, b = 1;
    for (int bit = 62; bit >= 0; bit--) {
        long long c = a * ((2 * b - a + MOD) % MOD) % MOD;
        long long d = (a * a + b * b) % MOD;
        if ((n >> bit) & 1ULL) {
            a = d;
            b = (c + d) % MOD;
        } else {
            a = c;
            b = d;
        }
    }
    return a;
}

int main(void) {
    int t;
    if (scanf("%d", &t) != 1) return 1;
    while (t-- > 0) {
        unsigned long long n;
        if (scanf("%llu", &n) != 1) return 1;
        printf("%lld\n", fib(n));
    }
    return 0;
}
