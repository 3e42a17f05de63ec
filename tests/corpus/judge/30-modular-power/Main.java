import java.util.Scanner;

public class Main {
    static long power(long a, long b, long m) {
        long result = 1 % m;
        for (a %= m; b > 0; b >>= 1) {
            if ((b & 1) == 1) result = result * a % m;
            a = a * a % m;
        }
        return result;
    }

    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int q = in.nextInt();
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < q; i++) {
            long a = in.nextLong(), b = in.nextLong(), m = in.nextLong();
            out.append(power(a, b, m)).append('\n');
        }
        System.out.print(out);
    }
}
