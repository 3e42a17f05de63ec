import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        final long mod = 1_000_000_007L;
        Scanner in = new Scanner(System.in);
        int n = in.nextInt();
        int t = in.nextInt();
        long[] ways = new long[t + 1];
        ways[0] = 1;
        for (int i = 0; i < n; i++) {
            int c = in.nextInt();
            for (int x = c; x <= t; x++) ways[x] = (ways[x] + ways[x - c]) % mod;
        }
        System.out.println(ways[t]);
    }
}
