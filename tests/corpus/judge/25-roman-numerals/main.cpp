#include <cctype>
#include <iostream>
#include <map>
#include <string>

int main() {
    const int values[] = {1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1};
    const char *symbols[] = {"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"};
    const std::map<char, int> letter = {{'I', 1},   {'V', 5},   {'X', 10},  {'L', 50},
                                        {'C', 100}, {'D', 500}, {'M', 1000}};
    int q;
    std::cin >> q;
    for (std::string tok; q-- > 0 && std::cin >> tok;) {
        if (std::isdigit(static_cast<unsigned char>(tok[0]))) {
            int n = std::stoi(tok);
            std::string out;
            for (int i = 0; i < 13; ++i)
                for (; n >= values[i]; n -= values[i]) out += symbols[i];
            std::cout << out << '\n';
        } else {
            int total = 0;
            for (std::size_t i = 0; i < tok.size(); ++i) {
                int v = letter.at(tok[i]);
                if (i + 1 < tok.size() && letter.at(tok[i + 1]) > v)
                    total -= v;
                else
                    total += v;
            }
            std::cout << total << '\n';
        }
    }
}
