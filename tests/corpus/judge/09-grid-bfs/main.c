#include <stdio.h>

static char grid[100][128];
static int dist[100 * 100], queue[100 * 100];

int main(void) {
    int r, c;
    if (scanf("%d %d", &r, &c) != 2) return 1;
    int head = 0, tail = 0;
    for (int i = 0; i < r; i++) {
        if (scanf("%127s", grid[i]) != 1) return 1;
        for (int j = 0; j < c; j++) {
            dist[i * c + j] = -1;
            if (grid[i][j] == 'S') {
                dist[i * c + j] = 0;
                queue[tail++] = i * c + j;
            }
        }
    }
    const int di[4] = {1, -1, 0, 0}, dj[4] = {0, 0, 1, -1};
    while (head < tail) {
        int cur = queue[head++], i = cur / c, j = cur % c;
        if (grid[i][j] == 'T') {
            printf("%d\n", dist[cur]);
            return 0;
        }
        for (int k = 0; k < 4; k++) {
            int a = i + di[k], b = j + dj[k];
            if (a >= 0 && a < r && b >= 0 && b < c && grid[a][b] != '#' && dist[a * c + b] < 0) {
                dist[a * c + b] = dist[cur] + 1;
                queue[tail++] = a * c + b;
            }
        }
    }
    printf("-1\n");
    return 0;
}
