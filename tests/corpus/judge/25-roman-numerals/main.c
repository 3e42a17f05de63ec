#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int VALUES[] = {1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1};
static const char *SYMBOLS[] = {"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"};

static int letter(char c) {
    switch (c) {
    case 'I': return 1;
    case 'V': return 5;
    case 'X': return 10;
    case 'L': return 50;
    case 'C': return 100;
    case 'D': return 500;
    case 'M': return 1000;
    default: return 0;
    }
}

int main(void) {
    int q;
    if (scanf("%d", &q) != 1) return 1;
    char tok[64];
    while (q-- > 0 && scanf("%63s", tok) == 1) {
        if (isdigit((unsigned char)tok[0])) {
            int n = atoi(tok);
            for (int i = 0; i < 13; i++) {
                while (n >= VALUES[i]) {
                    fputs(SYMBOLS[i], stdout);
                    n -= VALUES[i];
                }
            }
            putchar('\n');
        } else {
            int total = 0, len = (int)strlen(tok);
            for (int i = 0; i < len; i++) {
                int v = letter(tok[i]);
                if (i + 1 < len && letter(tok[i + 1]) > v) total -= v; else total += v;
            }
            printf("%d\n", total);
        }
    }
    return 0;
}
