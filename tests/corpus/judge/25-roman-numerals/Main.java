import java.util.Map;
import java.util.Scanner;

public class Main {
    static final int[] VALUES = {1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1};
    static final String[] SYMBOLS = {"M", "CM", "D", "CD", "C", "XC", "L", "XL", "X", "IX", "V", "IV", "I"};
    static final Map<Character, Integer> LETTER =
            Map.of('I', 1, 'V', 5, 'X', 10, 'L', 50, 'C', 100, 'D', 500, 'M', 1000);

    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        int q = in.nextInt();
        StringBuilder out = new StringBuilder();
        for (int k = 0; k < q; k++) {
            String tok = in.next();
            if (Character.isDigit(tok.charAt(0))) {
                int n = Integer.parseInt(tok);
                for (int i = 0; i < VALUES.length; i++) {
                    while (n >= VALUES[i]) {
                        out.append(SYMBOLS[i]);
                        n -= VALUES[i];
                    }
                }
            } else {
                int total = 0;
                for (int i = 0; i < tok.length(); i++) {
                    int v = LETTER.get(tok.charAt(i));
                    if (i + 1 < tok.length() && LETTER.get(tok.charAt(i + 1)) > v) total -= v;
                    else total += v;
                }
                out.append(total);
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
