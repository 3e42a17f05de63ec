#include <iostream>
#include <vector>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n, q;
    std::cin >> n >> q;
    std::vector<long long> prefix(n + 1, 0);
    for (int i = 0; i < n; i++) {
        long long x;
        std::cin >> x;
        prefix[i + 1] = prefix[i] + x;
    }
    while (q-- > 0) {
        int l, r;
        std::cin >> l >> r;
        std::cout << prefix[r] - prefix[l - 1] << '\n';
    }
    return 0;
}
