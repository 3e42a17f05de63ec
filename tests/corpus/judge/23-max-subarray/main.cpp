#include <algorithm>
#include <iostream>
#include <limits>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    long long best = std::numeric_limits<long long>::min(), cur = 0;
    for (int i = 0; i < n; ++i) {
        long long x;
        std::cin >> x;
        cur = (i == 0) ? x : std::max(x, cur + x);
        best = std::max(best, cur);
    }
    std::cout << best << '\n';
}
