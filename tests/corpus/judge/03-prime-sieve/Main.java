import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;

public class Main {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        int n = Integer.parseInt(in.readLine().trim());
        boolean[] composite = new boolean[n + 1];
        long count = 0;
        long total = 0;
        for (long i = 2; i <= n; i++) {
            if (composite[(int) i]) continue;
            count++;
            total += i;
            for (long j = i * i; j <= n; j += i) composite[(int) j] = true;
        }
        System.out.println(count + " " + total);
    }
}
