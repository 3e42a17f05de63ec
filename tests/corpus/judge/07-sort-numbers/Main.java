import java.io.IOException;
import java.util.Arrays;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        long[] xs = new long[n];
        for (int i = 0; i < n; i++) xs[i] = Long.parseLong(t[1 + i]);
        Arrays.sort(xs);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            if (i > 0) sb.append(' ');
            sb.append(xs[i]);
        }
        System.out.println(sb);
    }
}
