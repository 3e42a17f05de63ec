#include <iostream>
#include <vector>

int main() {
    int n;
    std::cin >> n;
    std::vector<unsigned long long> row{1};
    for (int k = 0; k < n; ++k) {
        std::vector<unsigned long long> next{1};
        for (std::size_t i = 0; i + 1 < row.size(); ++i) next.push_back(row[i] + row[i + 1]);
        next.push_back(1);
        row.swap(next);
    }
    for (std::size_t i = 0; i < row.size(); ++i) std::cout << (i ? " " : "") << row[i];
    std::cout << '\n';
}
