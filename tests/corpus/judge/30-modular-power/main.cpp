#include <cstdint>
#include <iostream>

static std::uint64_t power(std::uint64_t a, std::uint64_t b, std::uint64_t m) {
    std::uint64_t result = 1 % m;
    for (a %= m; b > 0; b >>= 1) {
        if (b & 1) result = result * a % m;
        a = a * a % m;
    }
    return result;
}

int main() {
    int q;
    std::cin >> q;
    while (q-- > 0) {
        std::uint64_t a, b, m;
        std::cin >> a >> b >> m;
        std::cout << power(a, b, m) << '\n';
    }
}
