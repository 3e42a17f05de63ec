#include <algorithm>
#include <iostream>
#include <string>
#include <unordered_map>

int main() {
    int n;
    std::cin >> n;
    std::unordered_map<std::string, int> groups;
    for (int i = 0; i < n; ++i) {
        std::string w;
        std::cin >> w;
        std::sort(w.begin(), w.end());
        ++groups[w];
    }
    int largest = 0;
    for (const auto &entry : groups) largest = std::max(largest, entry.second);
    std::cout << groups.size() << '\n' << largest << '\n';
}
