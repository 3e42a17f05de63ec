import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;

public class Main {
    private final String s;
    private int pos;

    private Main(String s) {
        this.s = s;
    }

    private char peek() {
        while (pos < s.length() && Character.isWhitespace(s.charAt(pos))) pos++;
        return pos < s.length() ? s.charAt(pos) : '\0';
    }

    private long expr() {
        long v = term();
        for (char op = peek(); op == '+' || op == '-'; op = peek()) {
            pos++;
            long r = term();
            v = op == '+' ? v + r : v - r;
        }
        return v;
    }

    private long term() {
        long v = factor();
        for (char op = peek(); op == '*' || op == '/'; op = peek()) {
            pos++;
            long r = factor();
            v = op == '*' ? v * r : v / r;
        }
        return v;
    }

    private long factor() {
        if (peek() == '(') {
            pos++;
            long v = expr();
            peek();
            pos++; // ')'
            return v;
        }
        long v = 0;
        while (pos < s.length() && Character.isDigit(s.charAt(pos))) v = v * 10 + (s.charAt(pos++) - '0');
        return v;
    }

    public static void main(String[] args) throws IOException {
        String line = new BufferedReader(new InputStreamReader(System.in)).readLine();
        System.out.println(new Main(line).expr());
    }
}
