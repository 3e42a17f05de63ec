#include <ctype.h>
#include <stdio.h>

static char line[1200];
static int pos;

static void skip(void) {
    while (line[pos] == ' ' || line[pos] == '\t') pos++;
}

static long long expr(void);

static long long factor(void) {
    skip();
    if (line[pos] == '(') {
        pos++;
        long long v = expr();
        skip();
        pos++; /* ')' */
        return v;
    }
    long long v = 0;
    while (isdigit((unsigned char)line[pos])) v = v * 10 + (line[pos++] - '0');
    return v;
}

static long long term(void) {
    long long v = factor();
    for (;;) {
        skip();
        char op = line[pos];
        if (op != '*' && op != '/') return v;
        pos++;
        long long r = factor();
        v = op == '*' ? v * r : v / r;
    }
}

static long long expr(void) {
    long long v = term();
    for (;;) {
        skip();
        char op = line[pos];
        if (op != '+' && op != '-') return v;
        pos++;
        long long r = term();
        v = op == '+' ? v + r : v - r;
    }
}

int main(void) {
    if (!fgets(line, sizeof line, stdin)) return 1;
    printf("%lld\n", expr());
    return 0;
}
