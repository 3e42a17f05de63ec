#include <stdio.h>
#include <string.h>

static char a[1100], b[1100];
static int prev[1101], cur[1101];

int main(void) {
    if (scanf("%1099s %1099s", a, b) != 2) return 1;
    int n = (int)strlen(a), m = (int)strlen(b);
    for (int i = 0; i < n; i++) {
        cur[0] = 0;
        for (int j = 0; j < m; j++) {
            if (a[i] == b[j])
                cur[j + 1] = prev[j] + 1;
            else
                cur[j + 1] = prev[j + 1] > cur[j] ? prev[j + 1] : cur[j];
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(m + 1));
    }
    printf("%d\n", prev[m]);
    return 0;
}
