import java.io.IOException;

public class Main {
    static final long MOD = 1_000_000_007L;

    static long fib(long n) {
        long a = 0;
        long b = 1;
        for (int bit = 62; bit >= 0; bit--) {
            long c = a * ((2 * b - a + MOD) % MOD) % MOD;
            long d = (a * a + b * b) % MOD;
            if (((n >> bit) & 1L) == 1L) {
                a = d;
                b = (c + d) % MOD;
            } else {
                a = c;
                b = d;
            }
        }
        return a;
    }

    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int q = Integer.parseInt(t[0]);
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= q; i++) sb.append(fib(Long.parseLong(t[i]))).append('\n');
        System.out.print(sb);
    }
}
