#include <algorithm>
#include <iostream>
#include <vector>

int main() {
    int n;
    long long budget;
    std::cin >> n >> budget;
    std::vector<long long> a(n);
    for (auto &x : a) std::cin >> x;
    long long total = 0;
    int best = 0, left = 0;
    for (int right = 0; right < n; right++) {
        total += a[right];
        while (total > budget) total -= a[left++];
        best = std::max(best, right - left + 1);
    }
    std::cout << best << '\n';
    return 0;
}
