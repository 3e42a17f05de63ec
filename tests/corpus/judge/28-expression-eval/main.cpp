#include <cctype>
#include <iostream>
#include <string>
#include <utility>

class Parser {
  public:
    explicit Parser(std::string text) : s_(std::move(text)) {}

    long long expr() {
        long long v = term();
        for (char op; (op = peek()) == '+' || op == '-';) {
            ++pos_;
            long long r = term();
            v = op == '+' ? v + r : v - r;
        }
        return v;
    }

  private:
    char peek() {
        while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
        return pos_ < s_.size() ? s_[pos_] : '\0';
    }

    long long term() {
        long long v = factor();
        for (char op; (op = peek()) == '*' || op == '/';) {
            ++pos_;
            long long r = factor();
            v = op == '*' ? v * r : v / r;
        }
        return v;
    }

    long long factor() {
        if (peek() == '(') {
            ++pos_;
            long long v = expr();
            peek();
            ++pos_;  // ')'
            return v;
        }
        long long v = 0;
        while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
            v = v * 10 + (s_[pos_++] - '0');
        return v;
    }

    std::string s_;
    std::size_t pos_ = 0;
};

int main() {
    std::string line;
    std::getline(std::cin, line);
    std::cout << Parser(line).expr() << '\n';
}
