import java.io.IOException;

public class Main {
    public static void main(String[] args) throws IOException {
        String[] t = new String(System.in.readAllBytes()).trim().split("\\s+");
        int n = Integer.parseInt(t[0]);
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= n; i++) {
            String r = new StringBuilder(t[i]).reverse().toString();
            sb.append(r).append(' ').append(r.equals(t[i]) ? "yes" : "no").append('\n');
        }
        System.out.print(sb);
    }
}
