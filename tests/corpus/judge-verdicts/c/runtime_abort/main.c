#include <assert.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    int n, m;
    if (scanf("%d %d", &n, &m) != 2) return 1;
    int *indeg = calloc(n, sizeof(int)); /* bug: tasks are numbered 1..n */
    for (int i = 0; i < m; i++) {
        int u, v;
        if (scanf("%d %d", &u, &v) != 2) return 1;
        assert(v < n && "task number out of range");
        indeg[v]++;
    }
    printf("unreachable for task n as a rule's target\n");
    free(indeg);
    return 0;
}
