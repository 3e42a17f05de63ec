#include <iostream>
#include <queue>
#include <string>
#include <utility>
#include <vector>

int main() {
    int r, c;
    std::cin >> r >> c;
    std::vector<std::string> grid(r);
    for (auto &row : grid) std::cin >> row;
    std::vector<std::vector<int>> dist(r, std::vector<int>(c, -1));
    std::queue<std::pair<int, int>> q;
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++)
            if (grid[i][j] == 'S') {
                dist[i][j] = 0;
                q.push({i, j});
            }
    const int di[4] = {1, -1, 0, 0}, dj[4] = {0, 0, 1, -1};
    while (!q.empty()) {
        auto [i, j] = q.front();
        q.pop();
        if (grid[i][j] == 'T') {
            std::cout << dist[i][j] << '\n';
            return 0;
        }
        for (int k = 0; k < 4; k++) {
            int a = i + di[k], b = j + dj[k];
            if (a >= 0 && a < r && b >= 0 && b < c && grid[a][b] != '#' && dist[a][b] < 0) {
                dist[a][b] = dist[i][j] + 1;
                q.push({a, b});
            }
        }
    }
    std::cout << -1 << '\n';
    return 0;
}
