#include <algorithm>
#include <iostream>
#include <string>

int main() {
    const std::string digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    unsigned long long n;
    unsigned b;
    std::cin >> n >> b;
    std::string out;
    do {
        out += digits[n % b];
        n /= b;
    } while (n > 0);
    std::reverse(out.begin(), out.end());
    std::cout << out << '\n';
}
