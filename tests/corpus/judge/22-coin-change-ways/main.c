#include <stdio.h>

#define MOD 1000000007LL

int main(void) {
    static long long ways[10001];
    int n, t;
    if (scanf("%d %d", &n, &t) != 2) return 1;
    ways[0] = 1;
    for (int i = 0; i < n; i++) {
        int c;
        if (scanf("%d", &c) != 1) return 1;
        for (int x = c; x <= t; x++) ways[x] = (ways[x] + ways[x - c]) % MOD;
    }
    printf("%lld\n", ways[t]);
    return 0;
}
