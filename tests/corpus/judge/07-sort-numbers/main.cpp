#include <algorithm>
#include <iostream>
#include <vector>

int main() {
    int n;
    std::cin >> n;
    std::vector<long long> xs(n);
    for (auto &x : xs) std::cin >> x;
    std::sort(xs.begin(), xs.end());
    for (int i = 0; i < n; i++) std::cout << (i ? " " : "") << xs[i];
    std::cout << '\n';
    return 0;
}
