#include <stdio.h>

static long long gcd(long long a, long long b) {
    while (b != 0) {
        long long r = a % b;
        a = b;
        b = r;
    }
    return a;
}

int main(void) {
    int t;
    if (scanf("%d", &t) != 1) return 1;
    while (t-- > 0) {
        long long a, b;
        if (scanf("%lld %lld", &a, &b) != 2) return 1;
        long long g = gcd(a, b);
        printf("%lld %lld\n", g, a / g * b);
    }
    return 0;
}
