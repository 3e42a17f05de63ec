#include <stdio.h>

static long long a[100][100], b[100][100];

int main(void) {
    int n, m, p;
    if (scanf("%d %d %d", &n, &m, &p) != 3) return 1;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < m; k++)
            if (scanf("%lld", &a[i][k]) != 1) return 1;
    for (int k = 0; k < m; k++)
        for (int j = 0; j < p; j++)
            if (scanf("%lld", &b[k][j]) != 1) return 1;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < p; j++) {
            long long s = 0;
            for (int k = 0; k < m; k++) s += a[i][k] * b[k][j];
            printf(j ? " %lld" : "%lld", s);
        }
        printf("\n");
    }
    return 0;
}
