#include <stdio.h>
#include <string.h>

static char opening(char c) {
    return c == ')' ? '(' : c == ']' ? '[' : '{';
}

int main(void) {
    int t;
    static char s[1100], stack[1100];
    if (scanf("%d", &t) != 1) return 1;
    while (t-- > 0) {
        if (scanf("%1099s", s) != 1) return 1;
        int top = 0, ok = 1;
        for (size_t i = 0; s[i] != '\0' && ok; i++) {
            char c = s[i];
            if (c == '(' || c == '[' || c == '{')
                stack[top++] = c;
            else if (top == 0 || stack[--top] != opening(c))
                ok = 0;
        }
        puts(ok && top == 0 ? "YES" : "NO");
    }
    return 0;
}
