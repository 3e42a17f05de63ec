#include <algorithm>
#include <iostream>
#include <vector>

int main() {
    int n;
    std::cin >> n;
    std::vector<long long> tails;
    for (int k = 0; k < n; k++) {
        long long x;
        std::cin >> x;
        auto it = std::lower_bound(tails.begin(), tails.end(), x);
        if (it == tails.end())
            tails.push_back(x);
        else
            *it = x;
    }
    std::cout << tails.size() << '\n';
    return 0;
}
