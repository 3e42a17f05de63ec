#include <iostream>

namespace {
int full;

long long place(int cols, int d1, int d2) {
    if (cols == full) return 1;
    long long count = 0;
    for (int free = full & ~(cols | d1 | d2); free != 0;) {
        int bit = free & -free;
        free -= bit;
        count += place(cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1);
    }
    return count;
}
}  // namespace

int main() {
    int n;
    std::cin >> n;
    full = (1 << n) - 1;
    std::cout << place(0, 0, 0) << '\n';
}
