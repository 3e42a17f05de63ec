import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] tok = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(tok[0]);
        long best = Long.MIN_VALUE;
        long cur = 0;
        for (int i = 1; i <= n; i++) {
            long x = Long.parseLong(tok[i]);
            cur = i == 1 ? x : Math.max(x, cur + x);
            best = Math.max(best, cur);
        }
        System.out.println(best);
    }
}
