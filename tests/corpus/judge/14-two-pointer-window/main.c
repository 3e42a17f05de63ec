#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n;
    long long budget;
    if (scanf("%d %lld", &n, &budget) != 2) return 1;
    long long *a = malloc(sizeof(long long) * (size_t)n);
    if (a == NULL) return 1;
    for (int i = 0; i < n; i++)
        if (scanf("%lld", &a[i]) != 1) return 1;
    long long total = 0;
    int best = 0, left = 0;
    for (int right = 0; right < n; right++) {
        total += a[right];
        while (total > budget) total -= a[left++];
        if (right - left + 1 > best) best = right - left + 1;
    }
    printf("%d\n", best);
    free(a);
    return 0;
}
