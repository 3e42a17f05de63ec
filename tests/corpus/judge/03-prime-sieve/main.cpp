#include <iostream>
#include <vector>

int main() {
    long long n;
    std::cin >> n;
    std::vector<bool> composite(n + 1, false);
    long long count = 0, total = 0;
    for (long long i = 2; i <= n; i++) {
        if (composite[i]) continue;
        count++;
        total += i;
        for (long long j = i * i; j <= n; j += i) composite[j] = true;
    }
    std::cout << count << ' ' << total << '\n';
    return 0;
}
