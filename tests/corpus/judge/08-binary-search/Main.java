import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        long[] a = new long[n];
        for (int i = 0; i < n; i++) a[i] = Long.parseLong(t[1 + i]);
        int q = Integer.parseInt(t[1 + n]);
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < q; k++) {
            long x = Long.parseLong(t[2 + n + k]);
            int lo = 0;
            int hi = n;
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (a[mid] <= x) lo = mid + 1;
                else hi = mid;
            }
            sb.append(lo).append('\n');
        }
        System.out.print(sb);
    }
}
