#include <array>
#include <cstdint>
#include <iostream>

using Mat = std::array<std::array<std::uint64_t, 2>, 2>;
const std::uint64_t MOD = 1000000007ULL;

Mat mul(const Mat &x, const Mat &y) {
    Mat r{};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 2; k++) r[i][j] = (r[i][j] + x[i][k] * y[k][j]) % MOD;
    return r;
}

int main() {
    int t;
    std::cin >> t;
    while (t-- > 0) {
        std::uint64_t n;
        std::cin >> n;
        Mat result{{{1, 0}, {0, 1}}};
        Mat base{{{1, 1}, {1, 0}}};
        while (n > 0) {
            if (n & 1) result = mul(result, base);
            base = mul(base, base);
            n >>= 1;
        }
        std::cout << result[0][1] << '\n';
    }
    return 0;
}
