import java.util.Arrays;
import java.util.Comparator;
import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int n = in.nextInt();
        long[][] iv = new long[n][2];
        for (int i = 0; i < n; i++) {
            iv[i][0] = in.nextLong();
            iv[i][1] = in.nextLong();
        }
        Arrays.sort(iv, Comparator.<long[]>comparingLong(x -> x[0]).thenComparingLong(x -> x[1]));
        StringBuilder out = new StringBuilder();
        long cl = iv[0][0], cr = iv[0][1];
        for (int i = 1; i < n; i++) {
            if (iv[i][0] <= cr) {
                cr = Math.max(cr, iv[i][1]);
            } else {
                out.append(cl).append(' ').append(cr).append('\n');
                cl = iv[i][0];
                cr = iv[i][1];
            }
        }
        out.append(cl).append(' ').append(cr).append('\n');
        System.out.print(out);
    }
}
