#include <stdio.h>
#include <string.h>

int main(void) {
    int t;
    char w[512], r[512];
    if (scanf("%d", &t) != 1) return 1;
    while (t-- > 0) {
        if (scanf("%511s", w) != 1) return 1;
        size_t n = strlen(w);
        for (size_t i = 0; i < n; i++) r[i] = w[n - 1 - i];
        r[n] = '\0';
        printf("%s %s\n", r, strcmp(r, w) == 0 ? "yes" : "no");
    }
    return 0;
}
