import java.util.Scanner;

public class Main {
    public static void main(String[] args) {
        Scanner in = new Scanner(System.in);
        String word = in.next();
        int length = word; // type error: a String is not an int
        System.out.println(length);
    }
}
