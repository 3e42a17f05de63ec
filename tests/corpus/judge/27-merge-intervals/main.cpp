#include <algorithm>
#include <iostream>
#include <utility>
#include <vector>

int main() {
    int n;
    std::cin >> n;
    std::vector<std::pair<long long, long long>> iv(n);
    for (auto &p : iv) std::cin >> p.first >> p.second;
    std::sort(iv.begin(), iv.end());
    std::vector<std::pair<long long, long long>> merged;
    for (const auto &p : iv) {
        if (!merged.empty() && p.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, p.second);
        else
            merged.push_back(p);
    }
    for (const auto &p : merged) std::cout << p.first << ' ' << p.second << '\n';
}
