#include <stdio.h>
#include <string.h>

int main(void) {
    static char s[1105];
    if (scanf("%1100s", s) != 1) return 1;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && s[j] == s[i]) j++;
        printf("%c%zu", s[i], j - i);
        i = j;
    }
    printf("\n");
    return 0;
}
