#include <stdio.h>
#include <stdlib.h>

static int *parent;

static int find(int x) {
    int root = x;
    while (parent[root] != root) root = parent[root];
    while (parent[x] != root) {
        int next = parent[x];
        parent[x] = root;
        x = next;
    }
    return root;
}

int main(void) {
    int n, m;
    if (scanf("%d %d", &n, &m) != 2) return 1;
    parent = malloc(sizeof(int) * (n + 1));
    for (int i = 0; i <= n; i++) parent[i] = i;
    int groups = n;
    for (int i = 0; i < m; i++) {
        int a, b;
        if (scanf("%d %d", &a, &b) != 2) return 1;
        a = find(a);
        b = find(b);
        if (a != b) {
            parent[a] = b;
            groups--;
        }
    }
    printf("%d\n", groups);
    return 0;
}
