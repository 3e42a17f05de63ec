#include <iostream>
#include <stack>
#include <string>

static bool balanced(const std::string &s) {
    std::stack<char> st;
    for (char c : s) {
        if (c == '(' || c == '[' || c == '{') {
            st.push(c);
            continue;
        }
        char want = c == ')' ? '(' : c == ']' ? '[' : '{';
        if (st.empty() || st.top() != want) return false;
        st.pop();
    }
    return st.empty();
}

int main() {
    int t;
    std::cin >> t;
    while (t-- > 0) {
        std::string s;
        std::cin >> s;
        std::cout << (balanced(s) ? "YES" : "NO") << '\n';
    }
    return 0;
}
