#include <stdio.h>

int main(void) {
    int n = 0;
    int *count = &n;
    double total = count; /* type error: a pointer is not a double */
    printf("%f\n", total);
    return 0;
}
