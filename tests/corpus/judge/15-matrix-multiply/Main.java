import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        int m = Integer.parseInt(t[1]);
        int p = Integer.parseInt(t[2]);
        long[][] a = new long[n][m];
        long[][] b = new long[m][p];
        int pos = 3;
        for (int i = 0; i < n; i++) for (int k = 0; k < m; k++) a[i][k] = Long.parseLong(t[pos++]);
        for (int k = 0; k < m; k++) for (int j = 0; j < p; j++) b[k][j] = Long.parseLong(t[pos++]);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < p; j++) {
                long s = 0;
                for (int k = 0; k < m; k++) s += a[i][k] * b[k][j];
                if (j > 0) sb.append(' ');
                sb.append(s);
            }
            sb.append('\n');
        }
        System.out.print(sb);
    }
}
