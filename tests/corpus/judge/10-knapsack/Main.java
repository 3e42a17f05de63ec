import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        int cap = Integer.parseInt(t[1]);
        long[] best = new long[cap + 1];
        for (int i = 0; i < n; i++) {
            int w = Integer.parseInt(t[2 + 2 * i]);
            long v = Long.parseLong(t[3 + 2 * i]);
            for (int c = cap; c >= w; c--) best[c] = Math.max(best[c], best[c - w] + v);
        }
        System.out.println(best[cap]);
    }
}
