#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n, m;
    if (scanf("%d %d", &n, &m) != 2) return 1;
    int *head = malloc(sizeof(int) * (n + 1));
    int *next = malloc(sizeof(int) * (m + 1));
    int *to = malloc(sizeof(int) * (m + 1));
    int *indeg = calloc(n + 1, sizeof(int));
    int *order = malloc(sizeof(int) * (n + 1));
    char *ready = calloc(n + 1, 1);
    for (int i = 0; i <= n; i++) head[i] = -1;
    for (int i = 0; i < m; i++) {
        int u;
        if (scanf("%d %d", &u, &to[i]) != 2) return 1;
        next[i] = head[u];
        head[u] = i;
        indeg[to[i]]++;
    }
    for (int v = 1; v <= n; v++) ready[v] = indeg[v] == 0;
    int len = 0;
    for (;;) {
        int u = 0;
        for (int v = 1; v <= n; v++) {
            if (ready[v]) { u = v; break; }
        }
        if (u == 0) break;
        ready[u] = 0;
        order[len++] = u;
        for (int e = head[u]; e != -1; e = next[e]) {
            if (--indeg[to[e]] == 0) ready[to[e]] = 1;
        }
    }
    if (len < n) {
        printf("IMPOSSIBLE\n");
    } else {
        for (int i = 0; i < n; i++) printf(i ? " %d" : "%d", order[i]);
        printf("\n");
    }
    return 0;
}
