#include <iostream>
#include <vector>

int main() {
    int n, m, p;
    std::cin >> n >> m >> p;
    std::vector<std::vector<long long>> a(n, std::vector<long long>(m)), b(m, std::vector<long long>(p));
    for (auto &row : a)
        for (auto &x : row) std::cin >> x;
    for (auto &row : b)
        for (auto &x : row) std::cin >> x;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < p; j++) {
            long long s = 0;
            for (int k = 0; k < m; k++) s += a[i][k] * b[k][j];
            std::cout << (j ? " " : "") << s;
        }
        std::cout << '\n';
    }
    return 0;
}
