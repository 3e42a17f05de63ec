#include <stdio.h>
#include <stdlib.h>

typedef struct { long long l, r; } Interval;

static int cmp(const void *a, const void *b) {
    const Interval *x = a, *y = b;
    if (x->l != y->l) return x->l < y->l ? -1 : 1;
    if (x->r != y->r) return x->r < y->r ? -1 : 1;
    return 0;
}

int main(void) {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    Interval *iv = malloc(sizeof(Interval) * n);
    for (int i = 0; i < n; i++) {
        if (scanf("%lld %lld", &iv[i].l, &iv[i].r) != 2) return 1;
    }
    qsort(iv, n, sizeof(Interval), cmp);
    long long cl = iv[0].l, cr = iv[0].r;
    for (int i = 1; i < n; i++) {
        if (iv[i].l <= cr) {
            if (iv[i].r > cr) cr = iv[i].r;
        } else {
            printf("%lld %lld\n", cl, cr);
            cl = iv[i].l;
            cr = iv[i].r;
        }
    }
    printf("%lld %lld\n", cl, cr);
    return 0;
}
