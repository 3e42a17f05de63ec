#include <iostream>
#include <vector>

int main() {
    const long long MOD = 1000000007LL;
    int n, t;
    std::cin >> n >> t;
    std::vector<long long> ways(t + 1, 0);
    ways[0] = 1;
    for (int i = 0; i < n; ++i) {
        int c;
        std::cin >> c;
        for (int x = c; x <= t; ++x) ways[x] = (ways[x] + ways[x - c]) % MOD;
    }
    std::cout << ways[t] << '\n';
}
