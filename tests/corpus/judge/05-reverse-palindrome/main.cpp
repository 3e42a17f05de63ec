#include <algorithm>
#include <iostream>
#include <string>

int main() {
    int t;
    std::cin >> t;
    while (t-- > 0) {
        std::string w;
        std::cin >> w;
        std::string r(w.rbegin(), w.rend());
        std::cout << r << ' ' << (r == w ? "yes" : "no") << '\n';
    }
    return 0;
}
