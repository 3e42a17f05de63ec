#include <stdio.h>
#include <string.h>

static void read_word(char *buf, int cap) {
    if (!fgets(buf, cap, stdin)) {
        buf[0] = '\0';
        return;
    }
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ')) buf[--n] = '\0';
}

int main(void) {
    static char a[256], b[256];
    static int prev[256], cur[256];
    read_word(a, sizeof a);
    read_word(b, sizeof b);
    int la = (int)strlen(a), lb = (int)strlen(b);
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            int diag = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (diag < best) best = diag;
            cur[j] = best;
        }
        memcpy(prev, cur, sizeof(int) * (lb + 1));
    }
    printf("%d\n", prev[lb]);
    return 0;
}
