#include <stdio.h>

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    unsigned long long row[64] = {1};
    for (int k = 1; k <= n; k++) {
        row[k] = 1;
        for (int i = k - 1; i > 0; i--) row[i] += row[i - 1];
    }
    for (int i = 0; i <= n; i++) printf(i ? " %llu" : "%llu", row[i]);
    printf("\n");
    return 0;
}
