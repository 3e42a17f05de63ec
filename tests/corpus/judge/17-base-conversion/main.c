#include <stdio.h>

int main(void) {
    const char *digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    unsigned long long n;
    unsigned b;
    if (scanf("%llu %u", &n, &b) != 2) return 1;
    char out[80];
    int len = 0;
    do {
        out[len++] = digits[n % b];
        n /= b;
    } while (n > 0);
    while (len > 0) putchar(out[--len]);
    putchar('\n');
    return 0;
}
