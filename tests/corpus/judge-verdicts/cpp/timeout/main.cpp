#include <algorithm>
#include <iostream>
#include <vector>

int main() {
    int n;
    std::cin >> n;
    std::vector<long long> a(n);
    for (auto &x : a) std::cin >> x;
    // volatile: C++ lets the compiler assume a side-effect-free loop ends (and drop it)
    volatile long long best = a[0], cur = 0;
    int i = 0;
    while (i < n) {  // bug: i is never advanced, so this never ends
        long long next = std::max(a[i], cur + a[i]);
        cur = next;
        if (next > best) best = next;
    }
    std::cout << best << '\n';
}
