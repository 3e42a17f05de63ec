#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

int main() {
    std::string a, b;
    std::cin >> a >> b;
    std::vector<int> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
    for (char ca : a) {
        for (std::size_t j = 0; j < b.size(); j++)
            cur[j + 1] = ca == b[j] ? prev[j] + 1 : std::max(prev[j + 1], cur[j]);
        std::swap(prev, cur);
    }
    std::cout << prev[b.size()] << '\n';
    return 0;
}
