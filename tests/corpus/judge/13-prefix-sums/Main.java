import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        int q = Integer.parseInt(t[1]);
        long[] prefix = new long[n + 1];
        for (int i = 0; i < n; i++) prefix[i + 1] = prefix[i] + Long.parseLong(t[2 + i]);
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < q; k++) {
            int l = Integer.parseInt(t[2 + n + 2 * k]);
            int r = Integer.parseInt(t[3 + n + 2 * k]);
            sb.append(prefix[r] - prefix[l - 1]).append('\n');
        }
        System.out.print(sb);
    }
}
