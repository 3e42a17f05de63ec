#include <iostream>
#include <numeric>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int t;
    std::cin >> t;
    while (t-- > 0) {
        long long a, b;
        std::cin >> a >> b;
        long long g = std::gcd(a, b);
        std::cout << g << ' ' << a / g * b << '\n';
    }
    return 0;
}
