#include <algorithm>
#include <iostream>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, q;
    std::cin >> n;
    std::vector<long long> a(n);
    for (auto &x : a) std::cin >> x;
    std::cin >> q;
    while (q-- > 0) {
        long long x;
        std::cin >> x;
        std::cout << (std::upper_bound(a.begin(), a.end(), x) - a.begin()) << '\n';
    }
    return 0;
}
