#include <iostream>

int main() {
    std::ios::sync_with_stdio(false);
    std::cin.tie(nullptr);
    int n;
    std::cin >> n;
    for (int i = 0; i < n; i++) {
        long long a, b;
        std::cin >> a >> b;
        std::cout << a + b << '\n';
    }
    return 0;
}
