#include <stdio.h>

/* The order is right; main then returns the number of tasks instead of 0, so the process
   exits 3 for three tasks and a judge scores it a runtime error whatever it printed. */
int main(void) {
    int n, m, u[5000], v[5000], indeg[1001] = {0}, done[1001] = {0}, printed = 0;
    if (scanf("%d %d", &n, &m) != 2) return 1;
    for (int i = 0; i < m; i++) {
        if (scanf("%d %d", &u[i], &v[i]) != 2) return 1;
        indeg[v[i]]++;
    }
    for (;;) {
        int next = 0;
        for (int t = 1; t <= n && next == 0; t++)
            if (!done[t] && indeg[t] == 0) next = t;
        if (next == 0) break;
        done[next] = 1;
        printf(printed++ ? " %d" : "%d", next);
        for (int i = 0; i < m; i++)
            if (u[i] == next) indeg[v[i]]--;
    }
    printf(printed < n ? "IMPOSSIBLE\n" : "\n");
    return printed;
}
