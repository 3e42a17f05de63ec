import java.util.Scanner;

public class Main {
    static int full;

    static long place(int cols, int d1, int d2) {
        if (cols == full) return 1;
        long count = 0;
        int free = full & ~(cols | d1 | d2);
        while (free != 0) {
            int bit = free & -free;
            free -= bit;
            count += place(cols | bit, ((d1 | bit) << 1) & full, (d2 | bit) >> 1);
        }
        return count;
    }

    public static void main(String[] args) {
        int n = new Scanner(System.in).nextInt();
        full = (1 << n) - 1;
        System.out.println(place(0, 0, 0));
    }
}
