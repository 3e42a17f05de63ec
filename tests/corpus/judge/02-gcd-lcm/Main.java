import java.io.IOException;

public class Main {
    static long gcd(long a, long b) {
        while (b != 0) {
            long r = a % b;
            a = b;
            b = r;
        }
        return a;
    }

    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            long a = Long.parseLong(t[1 + 2 * i]);
            long b = Long.parseLong(t[2 + 2 * i]);
            long g = gcd(a, b);
            sb.append(g).append(' ').append(a / g * b).append('\n');
        }
        System.out.print(sb);
    }
}
