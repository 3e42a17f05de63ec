#include <iostream>
#include <numeric>
#include <vector>

struct Dsu {
    std::vector<int> parent;
    explicit Dsu(int n) : parent(n + 1) { std::iota(parent.begin(), parent.end(), 0); }
    int find(int x) {
        while (parent[x] != x) {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        return x;
    }
    bool unite(int a, int b) {
        a = find(a);
        b = find(b);
        if (a == b) return false;
        parent[a] = b;
        return true;
    }
};

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, m;
    std::cin >> n >> m;
    Dsu dsu(n);
    int groups = n;
    for (int i = 0; i < m; ++i) {
        int a, b;
        std::cin >> a >> b;
        if (dsu.unite(a, b)) --groups;
    }
    std::cout << groups << '\n';
}
