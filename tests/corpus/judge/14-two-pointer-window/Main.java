import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        long budget = Long.parseLong(t[1]);
        long[] a = new long[n];
        for (int i = 0; i < n; i++) a[i] = Long.parseLong(t[2 + i]);
        long total = 0;
        int best = 0;
        int left = 0;
        for (int right = 0; right < n; right++) {
            total += a[right];
            while (total > budget) total -= a[left++];
            best = Math.max(best, right - left + 1);
        }
        System.out.println(best);
    }
}
