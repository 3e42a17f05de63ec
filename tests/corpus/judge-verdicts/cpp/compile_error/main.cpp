#include <iostream>
#include <string>

int main() {
    std::string word;
    std::cin >> word;
    int length = word;  // type error: a std::string is not an int
    std::cout << length << '\n';
}
