#include <stdio.h>
#include <stdlib.h>

/* Dijkstra with a binary heap over (distance, node) pairs; lazy deletion. */
typedef struct { long long d; int v; } Item;

static Item *heap;
static int heap_len;

static void push(long long d, int v) {
    int i = heap_len++;
    heap[i].d = d;
    heap[i].v = v;
    while (i > 0) {
        int p = (i - 1) / 2;
        if (heap[p].d <= heap[i].d) break;
        Item t = heap[p]; heap[p] = heap[i]; heap[i] = t;
        i = p;
    }
}

static Item pop(void) {
    Item top = heap[0];
    heap[0] = heap[--heap_len];
    int i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, k = i;
        if (l < heap_len && heap[l].d < heap[k].d) k = l;
        if (r < heap_len && heap[r].d < heap[k].d) k = r;
        if (k == i) break;
        Item t = heap[k]; heap[k] = heap[i]; heap[i] = t;
        i = k;
    }
    return top;
}

int main(void) {
    int n, m, s;
    if (scanf("%d %d %d", &n, &m, &s) != 3) return 1;
    int *head = malloc(sizeof(int) * (n + 1));
    int *next = malloc(sizeof(int) * (m + 1));
    int *to = malloc(sizeof(int) * (m + 1));
    long long *w = malloc(sizeof(long long) * (m + 1));
    long long *dist = malloc(sizeof(long long) * (n + 1));
    heap = malloc(sizeof(Item) * (m + 2));
    for (int i = 0; i <= n; i++) { head[i] = -1; dist[i] = -1; }
    for (int i = 0; i < m; i++) {
        int u;
        if (scanf("%d %d %lld", &u, &to[i], &w[i]) != 3) return 1;
        next[i] = head[u];
        head[u] = i;
    }
    dist[s] = 0;
    push(0, s);
    while (heap_len > 0) {
        Item it = pop();
        if (it.d > dist[it.v]) continue;
        for (int e = head[it.v]; e != -1; e = next[e]) {
            long long nd = it.d + w[e];
            if (dist[to[e]] == -1 || nd < dist[to[e]]) {
                dist[to[e]] = nd;
                push(nd, to[e]);
            }
        }
    }
    for (int i = 1; i <= n; i++) printf(i > 1 ? " %lld" : "%lld", dist[i]);
    printf("\n");
    return 0;
}
