#include <stdio.h>

int main(void) {
    int q;
    if (scanf("%d", &q) != 1) return 1;
    while (q-- > 0) {
        unsigned long long a, b, m;
        if (scanf("%llu %llu %llu", &a, &b, &m) != 3) return 1;
        unsigned long long result = 1 % m, base = a % m;
        while (b > 0) {
            if (b & 1) result = result * base % m;
            base = base * base % m;
            b >>= 1;
        }
        printf("%llu\n", result);
    }
    return 0;
}
