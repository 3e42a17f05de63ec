#include <iostream>
#include <string>

int main() {
    std::string s;
    std::cin >> s;
    std::string out;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t j = i;
        while (j < s.size() && s[j] == s[i]) ++j;
        out += s[i];
        out += std::to_string(j - i);
        i = j;
    }
    std::cout << out << '\n';
}
