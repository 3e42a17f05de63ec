#include <algorithm>
#include <iostream>

int main() {
    int n;
    std::cin >> n;
    long long best = 0, cur = 0;  // bug: all-negative input must not answer 0
    for (int i = 0; i < n; ++i) {
        long long x;
        std::cin >> x;
        cur = std::max(x, cur + x);
        best = std::max(best, cur);
    }
    std::cout << best << '\n';
}
