#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_char(const void *a, const void *b) { return *(const char *)a - *(const char *)b; }
static int cmp_key(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    char (*keys)[32] = malloc(sizeof(*keys) * n);
    for (int i = 0; i < n; i++) {
        if (scanf("%31s", keys[i]) != 1) return 1;
        qsort(keys[i], strlen(keys[i]), 1, cmp_char);
    }
    qsort(keys, n, sizeof(*keys), cmp_key);
    int groups = 0, largest = 0;
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && strcmp(keys[j], keys[i]) == 0) j++;
        groups++;
        if (j - i > largest) largest = j - i;
        i = j;
    }
    printf("%d\n%d\n", groups, largest);
    return 0;
}
