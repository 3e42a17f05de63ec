import java.util.Scanner;
import java.util.StringJoiner;

public class Main {
    public static void main(String[] args) {
        int n = new Scanner(System.in).nextInt();
        long[] row = new long[n + 1];
        row[0] = 1;
        for (int k = 1; k <= n; k++) {
            row[k] = 1;
            for (int i = k - 1; i > 0; i--) row[i] += row[i - 1];
        }
        StringJoiner out = new StringJoiner(" ");
        for (long v : row) out.add(Long.toString(v));
        System.out.println(out);
    }
}
